import { afterEach, describe, expect, it } from 'vitest';
import { SqliteJournal } from '../../db/journal-store.ts';
import { journalRefundsFound } from '../../server/backup/restore.ts';
import type { RefundAtStripe } from '../../server/backup/restore-plan.ts';
import { confirmEvent } from '../../server/confirm/record.ts';
import { buildChain, dispatchedSteps, EFFECT_ID, OTHER_EFFECT_ID, REFUND, REFUND_ID } from '../support/entries.ts';
import { fakeClock, openTempDatabase } from '../support/db-journals.ts';

// What a restore journals for each refund Stripe holds that the restored journal does not know:
// COMMITTED (never sent again) and, when Stripe reports it failed or canceled, the CONFIRMED a
// refund.failed webhook would have brought, so the item and the ledger do not say money went back.

const EFFECT = { ...REFUND, payment_intent: 'pi_881' };
const found = (status: string, effectId = EFFECT_ID): RefundAtStripe => ({
  effect_id: effectId,
  refund: REFUND_ID,
  amount: EFFECT.amount,
  currency: 'eur',
  payment_intent: EFFECT.payment_intent,
  status,
  created: 1_700_000_500,
});

const opened: { close(): void }[] = [];
afterEach(() => {
  for (const database of opened.splice(0)) database.close();
});

/** A journal holding `effectId`'s send as the backup had it: dispatched, its COMMITTED lost. */
async function restoredJournal() {
  const database = openTempDatabase();
  opened.push(database);
  const journal = new SqliteJournal({ db: database.db, ...fakeClock() });
  await journal.appendSealed(buildChain(EFFECT_ID, dispatchedSteps({ effect: EFFECT })));
  return journal;
}

describe('journalRefundsFound', () => {
  it.each([
    ['failed', ['COMMITTED', 'CONFIRMED failed']],
    ['canceled', ['COMMITTED', 'CONFIRMED canceled']],
    ['succeeded', ['COMMITTED']],
    ['pending', ['COMMITTED']],
  ])('a refund Stripe reports %s: %j after the send', async (status, written) => {
    const journal = await restoredJournal();
    await journalRefundsFound(journal, [found(status)]);
    const chain = await journal.entries(EFFECT_ID);
    expect(chain.slice(3).map((e) => (e.kind === 'CONFIRMED' ? `CONFIRMED ${e.status}` : e.kind))).toEqual(written);
    const confirmed = chain.find((e) => e.kind === 'CONFIRMED');
    if (confirmed !== undefined) {
      expect(confirmed).toMatchObject({ via: 'lookup', event: null, refund: REFUND_ID, amount: EFFECT.amount, payment_intent: 'pi_881', created: 1_700_000_500 });
    }
  });

  it('writes what the refund.failed webhook writes: that webhook arriving later is a duplicate', async () => {
    const journal = await restoredJournal();
    await journalRefundsFound(journal, [found('failed')]);
    const object = { id: REFUND_ID, amount: EFFECT.amount, payment_intent: 'pi_881', status: 'failed', metadata: { interlock_effect_id: EFFECT_ID } };
    expect(await confirmEvent(journal, { id: 'evt_failed', type: 'refund.failed', livemode: false, created: 1_700_000_600, data: { object } })).toBe('DUPLICATE_IGNORED');
  });

  it('a refund whose request the backup never saw is committed only: with no send to match, a webhook could not confirm it either', async () => {
    const journal = await restoredJournal();
    await journalRefundsFound(journal, [found('failed', OTHER_EFFECT_ID)]);
    expect((await journal.entries(OTHER_EFFECT_ID)).map((e) => e.kind)).toEqual(['COMMITTED']);
  });
});
