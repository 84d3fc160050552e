import { describe, expect, it } from 'vitest';
import { MemoryJournal } from '../../db/journal-memory.ts';
import { MemoryDerivedTables } from '../../db/memory/derived.ts';
import type { Entry } from '../../shared/entries.ts';
import { LedgerProjection } from '../../server/ledger/projection.ts';
import { Views } from '../../server/views/views.ts';
import { refundChain, refundEffectId } from '../support/ledger-journal.ts';

// The ledger read from its derived table: memory holds open chains only, a closed chain leaves it
// once the table holds the entry that closed it, a late entry for a chain not in memory folds it
// again from the journal, and a server started on tables it built reads no chain until one moves.

const quiet = { fatal: () => {}, error: () => {} };
const displayName = (login: string) => `Name of ${login}`;

/** A journal that counts the chains read from it, by effect id. */
class CountingJournal extends MemoryJournal {
  readonly reads: string[] = [];
  override async entries(effectId: string): Promise<Entry[]> {
    this.reads.push(effectId);
    return super.entries(effectId);
  }
}

const viewsOn = (journal: MemoryJournal, derived: MemoryDerivedTables) => new Views({ journal, inboxName: 'inbox', nowMs: () => 0, log: quiet, derived });

/** The ledger as the whole-journal fold gives it: the rows every page must answer. */
async function foldedWhole(journal: MemoryJournal): Promise<LedgerProjection> {
  const projection = new LedgerProjection('inbox');
  for (const { seq, entry } of await journal.scan(0, 1_000_000)) projection.note(entry, seq);
  return projection;
}

async function expectSameLedger(views: Views, journal: MemoryJournal): Promise<void> {
  const { ledger } = await views.current();
  const whole = await foldedWhole(journal);
  expect(await ledger.page({}, { limit: 1_000 }, displayName)).toEqual(whole.page({}, { limit: 1_000 }, displayName));
  expect(await ledger.totals({}, displayName)).toEqual(whole.totals({}, displayName));
}

describe('the ledger from its derived table', () => {
  it('a closed chain leaves memory once the tables hold it; a late confirmation folds it again from the journal', async () => {
    const journal = new CountingJournal({ wallClockMs: () => 0 });
    const late = refundChain(1, ['succeeded', 'failed']);
    // Refund 1 is confirmed (closed), refund 2 committed with no word from Stripe yet (open).
    await journal.appendSealed([...late.slice(0, 5), ...refundChain(2)]);
    const views = viewsOn(journal, new MemoryDerivedTables());
    // Nobody listens for the chains that moved: the closed one left memory as its page was written.
    const { ledger } = await views.current();
    expect(ledger.heldChains).toBe(1);
    expect(ledger.heldRow(refundEffectId(1), displayName)).toBeNull();
    expect((await ledger.rowOf(refundEffectId(1), displayName))?.outcome).toBe('refunded');
    expect(journal.reads).toEqual([]);

    // Stripe reports the refund failed after all.
    await journal.appendSealed(late.slice(5));
    const after = await views.current();
    expect(journal.reads).toEqual([refundEffectId(1)]);
    expect((await after.ledger.rowOf(refundEffectId(1), displayName))?.outcome).toBe('failed_at_stripe');
    await expectSameLedger(views, journal);
    expect((await views.current()).ledger.heldChains).toBe(1);
  });

  it('every page and total over a journal of many chains is the whole-journal fold’s, cursors included', async () => {
    const journal = new MemoryJournal({ wallClockMs: () => 0 });
    await journal.appendSealed(Array.from({ length: 1_300 }, (_, i) => refundChain(i + 1, i % 3 === 0 ? ['succeeded'] : [])).flat());
    const views = viewsOn(journal, new MemoryDerivedTables());
    const { ledger } = await views.current();
    const whole = await foldedWhole(journal);
    let beforeSeq: number | undefined;
    for (let pages = 0; pages < 10; pages++) {
      const asked = { limit: 173, ...(beforeSeq === undefined ? {} : { beforeSeq }) };
      const page = await ledger.page({}, asked, displayName);
      expect(page).toEqual(whole.page({}, asked, displayName));
      if (page.nextBeforeSeq === null) break;
      beforeSeq = page.nextBeforeSeq;
    }
    expect(beforeSeq).toBeDefined();
    expect(await ledger.totals({ currency: 'usd' }, displayName)).toEqual(whole.totals({ currency: 'usd' }, displayName));
    // Only the open rows (two in three) stay in memory.
    expect((await views.current()).ledger.heldChains).toBe(866);
  });

  it('a server started on tables it built reads no chain, and folds an open one again only when it moves', async () => {
    const journal = new CountingJournal({ wallClockMs: () => 0 });
    await journal.appendSealed([...refundChain(1, ['succeeded']), ...refundChain(2), ...refundChain(3, ['pending'])]);
    const tables = new MemoryDerivedTables();
    await viewsOn(journal, tables).current();
    const digests = await tables.digests();

    const restarted = viewsOn(journal, tables);
    expect(await restarted.replayAtStart()).toBeNull();
    expect(journal.reads).toEqual([]);
    const { ledger } = await restarted.current();
    expect(ledger.heldChains).toBe(0);
    expect(await tables.digests()).toEqual(digests);
    await expectSameLedger(restarted, journal);

    // Stripe's word on refund 3 reaches the restarted server: its chain alone is read and folded again, and its row closes.
    await journal.appendSealed(refundChain(3, ['pending', 'succeeded']).slice(5));
    await expectSameLedger(restarted, journal);
    expect(journal.reads).toEqual([refundEffectId(3)]);
  });
});
