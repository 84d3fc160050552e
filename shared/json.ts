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
 */
export function plain(value: unknown): Json {
  const text = JSON.stringify(value, (_key, v: unknown) => {
    if (typeof v === 'number' && !Number.isFinite(v)) throw new TypeError('a non-finite number has no JSON form');
    if (typeof v === 'bigint') throw new TypeError('a bigint has no JSON form');
    return v;
  });
  return text === undefined ? null : (JSON.parse(text) as Json);
}
