import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryDerivedTables } from '../../db/memory/derived.ts';
import type { LedgerPage } from '../../shared/ledger.ts';
import { isOpenRow } from '../../server/ledger/table.ts';
import { type AppWorld, buildAppWorld } from '../support/app-world.ts';

// A restart on the derived tables the first server wrote: the ledger's open rows are loaded from
// them (their chains folded from the journal), nothing is rebuilt, and every ledger answer is the
// same, byte for byte.

/** Tables that count their resets: a start on tables of its own version resets none. */
class CountingTables extends MemoryDerivedTables {
  resets = 0;
  override async reset(version: string): Promise<void> {
    this.resets += 1;
    return super.reset(version);
  }
}

const tables = new CountingTables();
let world: AppWorld;
let restarted: AppWorld | null = null;
let effects: Record<string, string>;
beforeAll(async () => {
  world = await buildAppWorld({ derived: tables });
  const ask = async (requestId: string, amount: number, flags: string[] = []) => {
    const answer = await world.agent('POST', '/v1/refunds', { request_id: requestId, payment_intent: await world.payment(10_000), amount, flags });
    return answer.json() as { status: string; effect_id: string };
  };
  const sent = await ask('restart-policy', 1_000);
  const queued = await ask('restart-queued', 1_200, ['fraud_review']);
  const rejected = await ask('restart-rejected', 1_300, ['fraud_review']);
  expect([sent.status, queued.status, rejected.status]).toEqual(['COMMITTED', 'QUEUED', 'QUEUED']);
  const escalation = (await world.services.journal.entries(rejected.effect_id)).findLast((entry) => entry.kind === 'ESCALATED')!.hash;
  expect(await world.services.inbox.reject(rejected.effect_id, 'rita', { seen: escalation })).toBe('REJECTED');
  effects = { sent: sent.effect_id, queued: queued.effect_id, rejected: rejected.effect_id };
});
afterAll(async () => {
  await restarted?.close();
  await world.close();
});

const PATHS = ['/api/ledger', '/api/ledger?limit=1', '/api/ledger?outcome=rejected', '/api/ledger/totals', '/api/ledger/totals?currency=usd'];

/** Each answer's bytes, but the time it was answered at (the application clock runs on). */
async function answers(w: AppWorld): Promise<string[]> {
  const fin = await w.login('fin');
  const bodies: string[] = [];
  for (const path of PATHS) {
    const answer = await w.as(fin, 'GET', path);
    expect(answer.statusCode).toBe(200);
    bodies.push(answer.body.replace(/"now_ms":\d+/, '"now_ms":0'));
  }
  const first = JSON.parse(bodies[1]!) as { next_cursor: string };
  bodies.push((await w.as(fin, 'GET', `/api/ledger?limit=1&cursor=${first.next_cursor}`)).body.replace(/"now_ms":\d+/, '"now_ms":0'));
  return bodies;
}

describe('the ledger across a restart on its derived tables', () => {
  it('answers every page and total as before, with nothing rebuilt and no chain folded at start', async () => {
    const before = await answers(world);
    expect(JSON.parse(before[0]!).rows).toHaveLength(3);
    expect(tables.resets).toBe(1);
    restarted = await buildAppWorld({ dir: world.dir, clock: world.clock, sandbox: world.sandbox, derived: tables });
    expect(tables.resets).toBe(1);
    expect(await answers(restarted)).toEqual(before);
    // Nothing is folded at start: the rows come from the table, and an open one is folded again
    // from the journal only when its chain next moves.
    const { ledger } = await restarted.services.views.current();
    const rows = (JSON.parse(before[0]!) as LedgerPage).rows;
    const open = rows.filter(isOpenRow).map((row) => row.effect_id);
    expect(open).toContain(effects.queued);
    expect(open).not.toContain(effects.rejected);
    expect(ledger.heldChains).toBe(0);
  });
});
