import { describe, expect, it } from 'vitest';
import { MemoryJournal } from '../../db/journal-memory.ts';
import { refundChain } from '../support/ledger-journal.ts';

// The memory journal keeps each chain's rows beside the rows in seq order (as SQLite keeps an
// index on effect_id). A write refused after it stored some of its rows is rolled back whole: the
// chains read, their last entries and the rows after any seq are the ones before it.

describe('MemoryJournal, a write refused part-way', () => {
  it('leaves every chain as it was: the reads, the next append and a scan see none of it', async () => {
    const journal = new MemoryJournal({ wallClockMs: () => 1_000 });
    const [first, second] = [refundChain(1), refundChain(2)];
    await journal.appendSealed(first.slice(0, 2));
    const before = { one: await journal.entries(first[0]!.effect_id), scan: await journal.scan(0, 100), head: await journal.head() };
    // The rest of chain 1 and chain 2's first entry are stored before chain 2's third, which does not link to its first.
    await expect(journal.appendSealed([...first.slice(2), second[0]!, second[2]!])).rejects.toThrow(/does not link/);
    expect(await journal.entries(first[0]!.effect_id)).toEqual(before.one);
    expect(await journal.entries(second[0]!.effect_id)).toEqual([]);
    expect(await journal.scan(0, 100)).toEqual(before.scan);
    expect(await journal.head()).toEqual(before.head);
    // The next write links to the last entry that stayed.
    await journal.appendSealed(first.slice(2));
    expect(await journal.entries(first[0]!.effect_id)).toEqual(first);
    expect((await journal.scan(0, 100)).map(({ seq }) => seq)).toEqual(first.map((_, i) => i + 1));
  });
});
