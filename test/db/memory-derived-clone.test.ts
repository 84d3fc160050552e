import { describe, expect, it } from 'vitest';
import { MemoryDerivedTables } from '../../db/memory/derived.ts';
import { DIGEST_MARK_EVERY, type DerivedRow } from '../../db/port/derived.ts';

// MemoryDerivedTables.clone: the simulator loads a copy of the tables taken mid-run, as a server
// loads a file it was stopped over. The copy must be the tables then, whatever happens to either after.

const row = (key: string, order: number, open: boolean, note: string): DerivedRow => ({ key, order, open, body: { note, nested: { list: [order] } } });
const cursor = (seq: number) => ({ seq, globalHash: `g${seq}`, size: seq, version: 'v1' });

async function standing(tables: MemoryDerivedTables) {
  return {
    cursor: await tables.cursor(),
    digests: await tables.digests(),
    marks: await tables.marks(),
    rows: await tables.list('ledger', { direction: 'asc', limit: 100 }),
    other: await tables.list('other', { direction: 'asc', limit: 100 }),
  };
}

describe('MemoryDerivedTables.clone', () => {
  it('copies every row, sum, mark and the cursor, and shares nothing with the tables it was taken of', async () => {
    const tables = new MemoryDerivedTables();
    await tables.advance({
      fromSeq: 0,
      to: cursor(DIGEST_MARK_EVERY),
      changes: [
        { view: 'ledger', key: 'a', row: row('a', 1, true, 'first') },
        { view: 'ledger', key: 'b', row: row('b', 2, false, 'second') },
        { view: 'other', key: 'x', row: row('x', 3, true, 'other') },
      ],
    });
    const before = await standing(tables);
    expect(before.marks).toHaveLength(1);
    const copy = tables.clone();
    expect(await standing(copy)).toEqual(before);

    // The tables move on: the copy stays where it was taken.
    await tables.advance({ fromSeq: DIGEST_MARK_EVERY, to: cursor(2 * DIGEST_MARK_EVERY), changes: [{ view: 'ledger', key: 'a', row: row('a', 1, false, 'closed') }, { view: 'other', key: 'x', row: null }] });
    expect(await standing(copy)).toEqual(before);

    // The copy moves on from its own cursor, and its digests are those of tables written the same way.
    const changes = [{ view: 'ledger', key: 'c', row: row('c', 4, true, 'third') }];
    expect(await copy.advance({ fromSeq: DIGEST_MARK_EVERY, to: cursor(DIGEST_MARK_EVERY + 5), changes })).toBe(true);
    const written = new MemoryDerivedTables();
    await written.advance({ fromSeq: 0, to: cursor(DIGEST_MARK_EVERY), changes: [{ view: 'ledger', key: 'a', row: row('a', 1, true, 'first') }, { view: 'ledger', key: 'b', row: row('b', 2, false, 'second') }, { view: 'other', key: 'x', row: row('x', 3, true, 'other') }] });
    await written.advance({ fromSeq: DIGEST_MARK_EVERY, to: cursor(DIGEST_MARK_EVERY + 5), changes });
    expect(await standing(copy)).toEqual(await standing(written));
    expect((await tables.get('ledger', 'c'))).toBeNull();
    expect((await tables.get('ledger', 'a'))?.body.note).toBe('closed');
    expect((await copy.get('ledger', 'a'))?.body.note).toBe('first');
  });

  it('a copy of tables never built is never built either', async () => {
    const copy = new MemoryDerivedTables().clone();
    expect(await copy.cursor()).toBeNull();
    expect(await copy.digests()).toEqual([]);
  });
});
