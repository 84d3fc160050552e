import { describe, expect, it } from 'vitest';
import { MemoryDerivedTables } from '../../db/memory/derived.ts';

// The memory store parses a row's body once and answers every read of the row with it, frozen
// through and through: a reader that tries to change what it read is refused at once (a store on
// disk answers each read with a body of its own, so no reader may count on changing one), and
// nothing a reader does reaches what the next reads.

const cursor = (seq: number) => ({ seq, globalHash: `g${seq}`, size: seq, version: 'v1' });

describe('MemoryDerivedTables reads', () => {
  it('answer a body frozen to its depths: changing it throws, and every read answers the body written', async () => {
    const tables = new MemoryDerivedTables();
    const body = { note: 'first', nested: { list: [1, { deep: true }] } };
    await tables.advance({ fromSeq: 0, to: cursor(1), changes: [{ view: 'ledger', key: 'a', row: { key: 'a', order: 1, open: true, body } }] });
    // What the writer keeps changing after the batch is not in the tables.
    body.note = 'changed by the writer';
    const got = (await tables.get('ledger', 'a'))!;
    const listed = (await tables.list('ledger', { direction: 'asc', limit: 10 }))[0]!;
    for (const read of [got.body, listed.body]) {
      expect(() => {
        (read as { note: string }).note = 'changed';
      }).toThrow(TypeError);
      expect(() => {
        ((read.nested as { list: unknown[] }).list as unknown[]).push(2);
      }).toThrow(TypeError);
      expect(() => {
        (((read.nested as { list: unknown[] }).list[1] as { deep: boolean }).deep = false);
      }).toThrow(TypeError);
    }
    expect((await tables.get('ledger', 'a'))!.body).toEqual({ note: 'first', nested: { list: [1, { deep: true }] } });
  });
});
