import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compareKeys } from '../../db/derived-rules.ts';

// Rows with the same order list by key in UTF-8 byte order, as SQLite and PostgreSQL compare
// text. compareKeys reads the UTF-16 units as far as they settle it and the bytes only where
// they do not: it must answer what the bytes answer, for every pair of strings (two distinct
// strings of the same bytes, lone surrogates both written as U+FFFD, by their length, then 1).

const encoder = new TextEncoder();

function byBytes(a: string, b: string): number {
  const x = encoder.encode(a);
  const y = encoder.encode(b);
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i]! < y[i]! ? -1 : 1;
  if (a === b) return 0;
  return x.length < y.length ? -1 : 1;
}

/** Units around the places UTF-16 and UTF-8 orders part: below the surrogates, the surrogates, above them. */
const unit = fc.oneof(
  fc.constantFrom('a', 'B', 'é', '\ud7ff', '\ud800', '\udbff', '\udc00', '\udfff', '\ue000', 'Ａ', '\uffff', '𝄞', '😀'),
  fc.integer({ min: 0, max: 0xffff }).map((code) => String.fromCharCode(code)),
);
const key = fc.array(unit, { maxLength: 6 }).map((units) => units.join(''));

describe('the order of keys', () => {
  it('is the order of their UTF-8 bytes, lone surrogates and characters past U+FFFF among them', () => {
    expect(compareKeys('Ａ', '𝄞')).toBe(-1);
    expect(compareKeys('\ue000', '\ud800')).toBe(-1);
    expect(compareKeys('a', 'a𝄞')).toBe(-1);
    fc.assert(
      fc.property(key, key, fc.string({ maxLength: 4 }), (a, b, prefix) => {
        expect(compareKeys(prefix + a, prefix + b)).toBe(byBytes(prefix + a, prefix + b));
      }),
      { numRuns: 2_000 },
    );
  });
});
