import { describe, expect, it } from 'vitest';
import { entryOfRow, rowOf, sealNext, VerifiedBodies } from '../../db/journal-rules.ts';
import { JournalCorruptError } from '../../server/journal/store.ts';

const sealed = sealNext('PROPOSED', 'abc123def456', { agent: 'a', lease: null, premises: null, effect: { amount: 5 } }, undefined, 1_000);
const row = { ...rowOf(sealed), seq: 7 };

describe('VerifiedBodies', () => {
  it('lookupOnly: sees what was remembered, and remembers nothing itself', () => {
    const verified = new VerifiedBodies();
    verified.lookupOnly.remember(7, row.body);
    expect(verified.holds(7, row.body)).toBe(false);
    verified.remember(7, row.body);
    expect(verified.lookupOnly.holds(7, row.body)).toBe(true);
    expect(verified.lookupOnly.holds(7, ` ${row.body}`)).toBe(false);
  });

  it('entryOfRow: a row read through lookupOnly is checked in full and not remembered', () => {
    const verified = new VerifiedBodies();
    expect(entryOfRow(row, verified.lookupOnly)).toEqual(sealed);
    expect(verified.holds(7, row.body)).toBe(false);
    const forged = { ...row, body: row.body.replace('"amount":5', '"amount":500') };
    expect(() => entryOfRow(forged, verified.lookupOnly)).toThrow(JournalCorruptError);
  });

  it('entryOfRow: a remembered body is not hashed again, but its columns are still checked', () => {
    const verified = new VerifiedBodies();
    verified.remember(7, row.body);
    expect(entryOfRow(row, verified.lookupOnly)).toEqual(sealed);
    expect(() => entryOfRow({ ...row, kind: 'REFUSED' }, verified.lookupOnly)).toThrow(/seq 7 disagrees with its columns/);
  });
});
