import canonicalize from 'canonicalize';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonical, hashEntry, sha256Hex } from '../../server/journal/hash.ts';
import type { Entry } from '../../shared/entries.ts';
import type { Json, JsonObject } from '../../shared/json.ts';

// canonical() is written by hand for speed; the `canonicalize` package (RFC 8785) is the reference.
// For any value both give the same text, or both throw.

/** What the reference gives: its text, or that it threw. */
function reference(value: unknown): string | 'throws' {
  try {
    const text = canonicalize(value);
    return text === undefined ? 'throws' : text;
  } catch {
    return 'throws';
  }
}

function ours(value: unknown): string | 'throws' {
  try {
    return canonical(value as Json);
  } catch {
    return 'throws';
  }
}

/** Single UTF-16 code units of every kind: escaped, plain, non-ASCII, lone surrogate halves. */
const codeUnit = fc.oneof(
  fc.constantFrom('"', '\\', '/', '\u0000', '\b', '\t', '\n', '\f', '\r', '\u001f', '\u007f', '\u2028', '\u2029', '\ufeff'),
  fc.constantFrom('\ud800', '\udbff', '\udc00', '\udfff', '😀', 'é', 'ü', '中'),
  fc.integer({ min: 0, max: 0xffff }).map((code) => String.fromCharCode(code)),
);

/** Numbers JSON can hold, with the spellings ES number serialisation treats specially. */
const number = fc.oneof(
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.constantFrom(-0, 0, 1e21, 1e-7, 5e-324, Number.MAX_VALUE, -Number.MAX_VALUE, 2 ** 53, 0.1 + 0.2, 1 / 3, 123456789012345680000),
  fc.integer(),
);

const stringUnits = ['grapheme', 'binary', codeUnit] as const;

describe('canonical: the same bytes as the canonicalize package (RFC 8785)', () => {
  for (const stringUnit of stringUnits) {
    const name = typeof stringUnit === 'string' ? stringUnit : 'single code units';
    it(`canonical: any JSON value with ${name} strings is written as the package writes it`, () => {
      fc.assert(
        fc.property(fc.jsonValue({ stringUnit, maxDepth: 6 }), (value) => {
          expect(ours(value)).toBe(reference(value));
        }),
        { numRuns: 1_000 },
      );
    });
  }

  it('canonical: objects with any keys (integer-like, escaped, lone surrogates) and any numbers', () => {
    const leaf = fc.oneof(number, fc.string({ unit: codeUnit }), fc.boolean(), fc.constant(null));
    const key = fc.oneof(fc.string({ unit: codeUnit }), fc.nat().map(String), fc.constantFrom('hash', 'toString', '__proto__'));
    const value = fc.letrec((tie) => ({
      json: fc.oneof({ depthSize: 'small' }, leaf, tie('array'), tie('object')),
      array: fc.array(tie('json'), { maxLength: 5 }),
      object: fc.dictionary(key, tie('json'), { maxKeys: 6 }),
    })).json;
    fc.assert(
      fc.property(value, (v) => {
        expect(ours(v)).toBe(reference(v));
      }),
      { numRuns: 2_000 },
    );
  });

  it('canonical: numbers are written in ES number serialisation, -0 as 0', () => {
    fc.assert(
      fc.property(number, (n) => {
        expect(ours(n)).toBe(reference(n));
        expect(ours([n, { n }])).toBe(reference([n, { n }]));
      }),
      { numRuns: 2_000 },
    );
    expect(canonical(-0)).toBe('0');
    expect(canonical(1e21)).toBe('1e+21');
    expect(canonical(1e-7)).toBe('1e-7');
  });

  it('canonical: keys sort by UTF-16 code units, not by code point or as integers', () => {
    const value = { '\ud83d\ude00': 1, '\uffff': 2, '10': 3, '9': 4, b: 5, a: 6, '': 7 };
    expect(canonical(value)).toBe(reference(value));
    // U+1F600 is the pair D83D DE00, which sorts before U+FFFF by code unit (and after it by code point).
    expect(canonical(value)).toBe('{"":7,"10":3,"9":4,"a":6,"b":5,"\ud83d\ude00":1,"\uffff":2}');
  });

  it('canonical: non-finite numbers, lone surrogates, bigints and undefined have no canonical form', () => {
    for (const bad of [Number.NaN, Number.POSITIVE_INFINITY, -Infinity, '\ud800', { '\udc00': 1 }, [1, 'a\udfffb'], 1n, undefined]) {
      expect(() => canonical(bad as Json)).toThrow();
      expect(reference(bad)).toBe('throws');
    }
  });

  it('canonical: members with no JSON form are left out, array elements become null, as in the package', () => {
    const value = { a: undefined, b: () => 1, c: [undefined, () => 1, Symbol('s')], d: 1 } as unknown as Json;
    expect(canonical(value)).toBe(reference(value));
    expect(canonical(value)).toBe('{"c":[null,null,null],"d":1}');
  });

  it('canonical: nesting far deeper than the fast writer recurses is written as the package writes it', () => {
    for (const depth of [255, 256, 257, 5_000, 50_000]) {
      let array: Json = 'leaf';
      let object: Json = { z: 1 };
      for (let i = 0; i < depth; i++) {
        array = [array, i];
        object = { b: object, a: i };
      }
      expect(canonical(array)).toBe(reference(array));
      expect(canonical(object)).toBe(reference(object));
    }
  });

  it('canonical: objects that are not plain (toJSON, a Date, boxed values, no prototype) are written as the package writes them', () => {
    const noPrototype = Object.assign(Object.create(null) as JsonObject, { b: 1, a: [2] });
    const values = [
      { when: new Date(0), n: Object(5), s: Object('x'), t: Object(true) },
      { toJSON: () => ({ z: 1, a: 2 }), ignored: true },
      { inner: { toJSON: () => undefined }, kept: 1 },
      noPrototype,
      [noPrototype, new Date(1)],
    ];
    for (const value of values) expect(canonical(value as unknown as Json)).toBe(reference(value));
  });
});

describe('hashEntry: the hash of the canonical entry without its hash', () => {
  it('hashEntry: equals SHA-256 of the package text of every member except hash, wherever hash sits', () => {
    const fields = fc.dictionary(fc.string({ unit: 'binary' }), fc.jsonValue({ stringUnit: 'binary', maxDepth: 4 }), { maxKeys: 8 });
    fc.assert(
      fc.property(fields, fc.string({ unit: 'binary-ascii' }), (extra, hash) => {
        const entry = { ...extra, effect_id: 'abc123def456', kind: 'PROPOSED', ts_ms: 1, prev: null, hash } as unknown as Entry;
        const { hash: _ignored, ...rest } = entry as unknown as JsonObject;
        const expected = reference(rest);
        if (expected === 'throws') expect(() => hashEntry(entry)).toThrow();
        else expect(hashEntry(entry)).toBe(sha256Hex(expected));
      }),
      { numRuns: 1_000 },
    );
  });

  it('hashEntry: the worked example of the spec', () => {
    const entry = {
      agent: 'bot',
      effect: { order: '881', amount: 20 },
      effect_id: 'abc123def456',
      kind: 'PROPOSED',
      lease: 'L',
      premises: { refunded: 0, order: '881', eligible: true, amount: 100 },
      prev: null,
      ts: 1700000000.5,
    };
    expect(hashEntry(entry as unknown as Entry)).toBe('da582d21a3f9ca718968a33e1870d72c817ed33a56f6c5aec7992acd7f66a256');
  });
});
