import { afterAll, describe, expect, it } from 'vitest';
import type { Storage } from '../../db/port/storage.ts';
import { openStorage } from '../../db/sqlite-storage.ts';
import type { FieldsOf } from '../../shared/entries.ts';
import { watchRefundOutcomes } from '../../server/metrics/refund-outcomes.ts';
import { Views } from '../../server/views/views.ts';
import { cleanUpDatabases, effectIdOf, fakeClock, tempDbFile } from '../support/db-journals.ts';

// The refund outcome lines around a send under way when the server restarts: a request that
// comes back from the send to the status told before it is not told again, whether the server
// ran on through the send or was restarted while it was under way.

const wall = fakeClock();
const appMs = 1_700_000_000_000;
const quiet = { fatal: () => {}, error: () => {} };
const opened: Storage[] = [];

afterAll(async () => {
  for (const storage of opened) await storage.close();
  cleanUpDatabases();
});

const premises = { currency: 'usd', amount_paid: 10_000 };
const effect = { payment_intent: 'pi_1', amount: 7_001 };
const proposed: FieldsOf<'PROPOSED'> = {
  agent: 'inbox',
  lease: null,
  premises,
  effect,
  request: { id: 'case-1', agent: 'bot', payment_intent: 'pi_1', amount: 7_001, flags: [], reason: 'cracked jar' },
};

async function viewsOn(file: string): Promise<Views> {
  const storage = await openStorage({ file });
  opened.push(storage);
  const views = new Views({ journal: storage.journal({ wallClockMs: () => wall.nowMs }), inboxName: 'inbox', nowMs: () => appMs, log: quiet, derived: storage.derived });
  expect(await views.replayAtStart()).toBeNull();
  return views;
}

async function watched(views: Views): Promise<string[]> {
  const lines: string[] = [];
  await watchRefundOutcomes(views, { info: (_fields, message) => lines.push(message) });
  return lines;
}

/** A request asked and sent; `restart` between the send and what came of it; the send refused by Stripe, back to waiting. */
async function run(restart: boolean): Promise<{ before: string[]; after: string[] }> {
  const file = tempDbFile();
  let views = await viewsOn(file);
  const before = await watched(views);
  let after = before;
  const id = effectIdOf(1);
  const journal = views.journal;
  // Asked, and told QUEUED while its facts are read; then sent under the rules.
  await journal.append('PROPOSED', id, proposed);
  await views.current();
  await journal.append('DISPATCHED', id, { effect, lease: { by: 'policy', rules: ['amount at most $80.00'] }, premises, checks: { lease: null, lease_live: true, violations: [] }, reserves: 'pi_1' });
  await views.current();
  if (restart) {
    views = await viewsOn(file);
    after = await watched(views);
  }
  await views.journal.append('REFUSED', id, { code: 'target_error', reason: 'Stripe refused the refund', resolves: true });
  await views.current();
  return { before, after };
}

describe('refund outcome lines around a send and a restart', () => {
  it('tell the return from a send once, with a restart while it was under way as without', async () => {
    const straight = await run(false);
    const restarted = await run(true);
    // QUEUED once, by the server that ran on; the first server and the restarted one together tell the same.
    expect(straight.after).toEqual(['refund case-1 of bot: QUEUED']);
    expect([...restarted.before, ...restarted.after]).toEqual(straight.after);
  });
});
