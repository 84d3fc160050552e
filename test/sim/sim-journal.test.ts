import { describe, expect, it } from 'vitest';
import { entryOfRow, rowOf, sealNext } from '../../db/journal-rules.ts';
import { JournalCorruptError } from '../../server/journal/store.ts';
import { KeptEntries } from './sim-journal.ts';

// The world's journal keeps what it read (KeptEntries): a row is parsed, shaped and hashed once,
// and every later read of the same text at the same seq answers that entry, frozen. Its columns
// are checked at every read, and a row of other text at the seq (a write rolled back and another
// made) is checked in full.

const sealed = sealNext('PROPOSED', 'abc123def456', { agent: 'a', lease: null, premises: null, effect: { amount: 5 } }, undefined, 1_000);
const row = { ...rowOf(sealed), seq: 7 };

describe('KeptEntries', () => {
  it('answers every read of a row with the one entry it was trusted as, frozen to its depths', () => {
    const kept = new KeptEntries();
    const first = entryOfRow(row, kept);
    expect(first).toEqual(sealed);
    expect(entryOfRow({ ...row }, kept)).toBe(first);
    expect(entryOfRow(row, kept.lookupOnly)).toBe(first);
    expect(() => {
      (first as { ts_ms: number }).ts_ms = 0;
    }).toThrow(TypeError);
    expect(() => {
      ((first as unknown as { effect: { amount: number } }).effect.amount = 500);
    }).toThrow(TypeError);
  });

  it('checks the columns at every read, and other text at the seq in full', () => {
    const kept = new KeptEntries();
    entryOfRow(row, kept);
    expect(() => entryOfRow({ ...row, kind: 'REFUSED' }, kept)).toThrow(/seq 7 disagrees with its columns/);
    const forged = { ...row, body: row.body.replace('"amount":5', '"amount":500') };
    expect(() => entryOfRow(forged, kept)).toThrow(JournalCorruptError);
    const other = sealNext('PROPOSED', 'abc123def456', { agent: 'b', lease: null, premises: null, effect: { amount: 6 } }, undefined, 2_000);
    expect(entryOfRow({ ...rowOf(other), seq: 7 }, kept)).toEqual(other);
  });
});
