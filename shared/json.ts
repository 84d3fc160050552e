/** A JSON value: what the journal stores, hashes and sends. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** A JSON object. */
export type JsonObject = { [key: string]: Json };

/** True for a plain JSON object (not an array, not null). */
export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Deep equality of two JSON values. Unlike a loose comparison, `1` never equals `true`
 * and key order does not matter.
 */
export function jsonEqual(a: Json | undefined, b: Json | undefined): boolean {
  if (a === b) return true;
  if (a === undefined || b === undefined || a === null || b === null) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    return a.every((item, i) => jsonEqual(item, b[i]));
  }
  if (typeof a !== 'object' || typeof b !== 'object' || Array.isArray(b)) return false;
  const keysA = Object.keys(a);
  if (keysA.length !== Object.keys(b).length) return false;
  return keysA.every((key) => Object.hasOwn(b, key) && jsonEqual(a[key], b[key]));
}

/**
 * Normalise a value by a JSON round trip, so that what is compared and hashed is exactly what
 * is read back. Non-finite numbers have no JSON form and are refused rather than turned into null.
 * Plain objects, arrays and primitives (what the journal and the views hand it) are copied
 * directly, as the round trip would make them; anything else (a toJSON method, a Date, a class
 * instance, a boxed value, nesting past `plainDepthMax`) takes the round trip itself.
 */
export function plain(value: unknown): Json {
  try {
    return copyPlain(value, 0) ?? null;
  } catch (error) {
    if (error !== handOver) throw error;
  }
  const text = JSON.stringify(value, (_key, v: unknown) => {
    if (typeof v === 'number' && !Number.isFinite(v)) throw nonFinite();
    if (typeof v === 'bigint') throw aBigint();
    return v;
  });
  return text === undefined ? null : (JSON.parse(text) as Json);
}

const nonFinite = () => new TypeError('a non-finite number has no JSON form');
const aBigint = () => new TypeError('a bigint has no JSON form');

/** Thrown inside the direct copy to hand the whole value to the round trip. */
const handOver = Symbol('plain hand-over');

/** Nesting the direct copy takes; deeper values (a cycle among them) take the round trip. */
const plainDepthMax = 256;

/** What the round trip makes of a value: undefined for what JSON leaves out (undefined, a function, a symbol). */
function copyPlain(value: unknown, depth: number): Json | undefined {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value;
    case 'number':
      if (!Number.isFinite(value)) throw nonFinite();
      // JSON writes -0 as 0.
      return value === 0 ? 0 : value;
    case 'bigint':
      throw aBigint();
    case 'object': {
      if (value === null) return null;
      if (depth >= plainDepthMax) throw handOver;
      if (Array.isArray(value)) {
        if (Object.getPrototypeOf(value) !== Array.prototype) throw handOver;
        const out: Json[] = new Array(value.length);
        // As in JSON, an element with no JSON form (or a hole) is written as null.
        for (let i = 0; i < value.length; i++) out[i] = copyPlain(value[i], depth + 1) ?? null;
        return out;
      }
      const prototype = Object.getPrototypeOf(value);
      if (prototype !== Object.prototype && prototype !== null) throw handOver;
      const out: { [key: string]: Json } = {};
      const keys = Object.keys(value);
      // A toJSON method changes what JSON writes (before any member is read: a member it hides may
      // have no JSON form); a __proto__ key would set the copy's prototype.
      if (keys.includes('toJSON') || keys.includes('__proto__')) throw handOver;
      for (const key of keys) {
        const member = copyPlain((value as Record<string, unknown>)[key], depth + 1);
        if (member !== undefined) out[key] = member;
      }
      return out;
    }
    default:
      return undefined;
  }
}
