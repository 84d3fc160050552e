import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type Json, plain } from '../../shared/json.ts';

// plain() is what a JSON round trip makes of a value (non-finite numbers and bigints refused). It
// copies plain objects and arrays directly and hands anything else to the round trip: either way
// it must answer what the round trip answers, to the key order and the sign of zero.

function roundTrip(value: unknown): Json {
  const text = JSON.stringify(value, (_key, v: unknown) => {
    if (typeof v === 'number' && !Number.isFinite(v)) throw new TypeError('a non-finite number has no JSON form');
    if (typeof v === 'bigint') throw new TypeError('a bigint has no JSON form');
    return v;
  });
  return text === undefined ? null : (JSON.parse(text) as Json);
}

function outcome(run: () => Json): { value: string } | { error: string } {
  try {
    // Object.is on every number: -0 must come back as 0, as JSON writes it.
    return { value: JSON.stringify(run(), (_key, v: unknown) => (Object.is(v, -0) ? '-0' : v)) + JSON.stringify(Object.keys(run() ?? {})) };
  } catch (error) {
    return { error: `${(error as Error).name}: ${(error as Error).message}` };
  }
}

const odd = fc.constantFrom<unknown>(
  undefined,
  -0,
  Number.NaN,
  Number.POSITIVE_INFINITY,
  10n,
  () => 1,
  Symbol('s'),
  new Date(0),
  { toJSON: () => ({ shown: true }) },
  { toJSON: 'not a method' },
  new Number(Number.NaN),
  new String('boxed'),
  Object.create(null),
  JSON.parse('{"__proto__": {"x": 1}}'),
  // A hole, as an array with a length past its elements has.
  Object.assign(new Array(3), { 0: 1, 2: 3 }),
  '\ud800 lone',
);
const value = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: 'small' }, fc.jsonValue({ maxDepth: 2 }), odd, tie('object'), tie('array')),
  object: fc.dictionary(fc.oneof(fc.string(), fc.constantFrom('1', '0', '__proto__', 'toJSON', 'constructor')), tie('value'), { maxKeys: 5 }),
  array: fc.array(tie('value'), { maxLength: 4 }),
})).value;

describe('plain', () => {
  it('answers what a JSON round trip answers, or throws what it throws', () => {
    fc.assert(
      fc.property(value, (v) => {
        expect(outcome(() => plain(v))).toEqual(outcome(() => roundTrip(v)));
      }),
      { numRuns: 3_000 },
    );
  });

  it('writes -0 as 0, drops undefined members, nulls what arrays hold with no JSON form, and refuses non-finite numbers and bigints', () => {
    expect(Object.is(plain({ a: -0 }) && (plain({ a: -0 }) as { a: number }).a, 0)).toBe(true);
    expect(plain({ a: undefined, b: [undefined, () => 1], c: new Date(0) })).toEqual({ b: [null, null], c: '1970-01-01T00:00:00.000Z' });
    expect(() => plain({ a: [Number.NaN] })).toThrow('a non-finite number has no JSON form');
    expect(() => plain({ a: 1n })).toThrow('a bigint has no JSON form');
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    expect(() => plain(cycle)).toThrow(TypeError);
  });
});
