import { hash as digestOnce } from 'node:crypto';
import canonicalize from 'canonicalize';
import type { Entry, EntryEnvelope } from '../../shared/entries.ts';
import type { Json, JsonObject } from '../../shared/json.ts';
import { limits } from '../../shared/limits.ts';

// Every read of the journal re-hashes every entry, so the canonical form is written here by hand
// rather than by the `canonicalize` package: a recursive writer that takes JSON.stringify's own
// string and number forms takes half the time, and its output is the same bytes (a property
// test holds it to the package). The package stays as the writer of what the fast one does not
// take: nesting deeper than `canonicalDepthMax` (it does not recurse, so no depth exhausts the
// stack) and objects that are not plain (a Date, a class instance), which it serialises as
// JSON.stringify would.

/** Nesting the recursive writer takes; deeper values go to the package's iterative one. */
const canonicalDepthMax = 256;

/** Thrown inside the fast writer to hand the whole value to the package. */
const handOver = Symbol('canonical hand-over');

/** A string JSON.stringify writes as itself in quotes: no quote, backslash, control or surrogate. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: the control characters are what JSON escapes.
const needsEscape = /["\\\u0000-\u001f\ud800-\udfff]/;

/** RFC 8785 canonical JSON of a value: the bytes every hash and signature is taken over. */
export function canonical(value: unknown): string {
  try {
    const text = writeValue(value, 0);
    if (text === undefined) throw new TypeError('value has no canonical JSON form');
    return text;
  } catch (error) {
    if (error !== handOver) throw error;
  }
  const text = canonicalize(value);
  if (text === undefined) throw new TypeError('value has no canonical JSON form');
  return text;
}

/** Lowercase hex SHA-256 of a UTF-8 string. */
export function sha256Hex(text: string): string {
  // The one-shot digest: a Hash object per entry cost more than the hashing itself.
  return digestOnce('sha256', text, 'hex');
}

/** The hash of an entry: SHA-256 of the canonical JSON of every field except `hash`. */
export function hashEntry(unsealed: Readonly<Record<string, unknown>>): string {
  return sha256Hex(canonicalWithoutHash(unsealed));
}

/** Seal an entry: chain it to `prev` and hash it. */
export function sealEntry(fields: Unsealed): JsonObject {
  return { ...fields, hash: hashEntry(fields) };
}

/** An entry before its hash: the envelope (but the hash) and JSON fields. */
export type Unsealed = Omit<EntryEnvelope, 'hash'> & JsonObject;

/**
 * True when `text`, a stored entry's JSON text, hashes to `hash` once its member
 * `"hash":"<hash>"` is taken out. A journal stores each entry as its canonical JSON, so that text
 * is exactly the canonical JSON the hash was taken over, and checking it needs no re-serialising.
 * The member can only be the entry's own: unescaped quotes mark a real key, and no nested value
 * can hold the hash of the entry around it. False for any other text (one stored in another form
 * included): the caller then checks the parsed entry with `entryHashHolds`.
 */
export function storedTextHashHolds(text: string, hash: string): boolean {
  const member = `"hash":"${hash}"`;
  const at = text.indexOf(member);
  if (at < 0) return false;
  const end = at + member.length;
  let rest: string;
  if (text[at - 1] === ',') rest = text.slice(0, at - 1) + text.slice(end);
  else if (text[end] === ',') rest = text.slice(0, at) + text.slice(end + 1);
  else rest = text.slice(0, at) + text.slice(end);
  return sha256Hex(rest) === hash;
}

/** True when the stored hash of an entry matches its content. */
export function entryHashHolds(entry: Entry | JsonObject): boolean {
  return hashEntry(entry) === entry.hash;
}

/**
 * The effect id of a request: the first 12 hex chars of SHA-256 over the canonical JSON of the
 * request key. One key gives one effect id, one chain, forever; a re-decided payload under the
 * same key is therefore refused by payload binding rather than sent as a new refund.
 */
export function effectIdFor(requestKey: Json): string {
  return sha256Hex(canonical(requestKey)).slice(0, limits.effectIdHexChars);
}

/** canonical() of an entry without its `hash` member, written without copying the entry. */
function canonicalWithoutHash(entry: Readonly<Record<string, unknown>>): string {
  if (Object.getPrototypeOf(entry) === Object.prototype) {
    try {
      return writeObject(entry, 0, 'hash');
    } catch (error) {
      if (error !== handOver) throw error;
    }
  }
  const { hash: _ignored, ...rest } = entry;
  return canonical(rest);
}

/** The canonical text of a value, or undefined for what JSON omits (undefined, a function, a symbol). */
function writeValue(value: unknown, depth: number): string | undefined {
  switch (typeof value) {
    case 'string':
      return writeString(value);
    case 'number':
      if (!Number.isFinite(value)) throw new TypeError(`${value} has no canonical JSON form`);
      // For a finite number this is the ECMAScript Number::toString that RFC 8785 prescribes.
      return String(value);
    case 'boolean':
      return value ? 'true' : 'false';
    case 'object':
      if (value === null) return 'null';
      if (Array.isArray(value)) return writeArray(value, depth + 1);
      if (!isPlainObject(value)) throw handOver;
      return writeObject(value, depth + 1, undefined);
    case 'bigint':
      throw new TypeError('a bigint has no canonical JSON form');
    default:
      return undefined;
  }
}

/** True for an object made by a literal or JSON.parse: its members are all it holds. */
function isPlainObject(value: object): value is Record<string, unknown> {
  return Object.getPrototypeOf(value) === Object.prototype;
}

function writeArray(array: readonly unknown[], depth: number): string {
  if (depth > canonicalDepthMax) throw handOver;
  let text = '[';
  for (let i = 0; i < array.length; i++) {
    if (i > 0) text += ',';
    // As in JSON, an element with no JSON form is written as null.
    text += writeValue(array[i], depth) ?? 'null';
  }
  return `${text}]`;
}

/** Members in UTF-16 code unit order of their keys (what `sort()` does by default), minus `skip`. */
function writeObject(object: Record<string, unknown>, depth: number, skip: string | undefined): string {
  if (depth > canonicalDepthMax) throw handOver;
  const keys = sortKeys(Object.keys(object));
  let text = '{';
  for (const key of keys) {
    if (key === skip) continue;
    const value = object[key];
    const member = writeValue(value, depth);
    if (member === undefined) {
      // A toJSON method changes what JSON writes for the whole object; the package does that.
      if (key === 'toJSON' && typeof value === 'function') throw handOver;
      // As in JSON, a member with no JSON form is left out.
      continue;
    }
    if (text.length > 1) text += ',';
    text += keyText(key) + member;
  }
  return `${text}}`;
}

/**
 * Sort keys in place by UTF-16 code units, as `sort()` does. An insertion sort: objects have a
 * handful of keys, often already in order, and for those it costs less than the built-in sort.
 */
function sortKeys(keys: string[]): string[] {
  for (let i = 1; i < keys.length; i++) {
    const key = keys[i]!;
    let j = i - 1;
    while (j >= 0 && keys[j]! > key) {
      keys[j + 1] = keys[j]!;
      j--;
    }
    keys[j + 1] = key;
  }
  return keys;
}

/** Quoted keys with their colon, by key: entries use a few dozen keys, written millions of times. */
const keyTexts = new Map<string, string>();
/** Keys remembered at most; keys beyond them (from agents' requests, say) are quoted each time. */
const keyTextsMax = 4_096;

function keyText(key: string): string {
  let text = keyTexts.get(key);
  if (text === undefined) {
    text = `${writeString(key)}:`;
    if (keyTexts.size < keyTextsMax) keyTexts.set(key, text);
  }
  return text;
}

/** A string as JSON.stringify quotes it; a lone surrogate has no canonical form (RFC 8785 refuses it). */
function writeString(value: string): string {
  if (!needsEscape.test(value)) return `"${value}"`;
  if (!isWellFormed(value)) throw new TypeError('a string with a lone surrogate has no canonical JSON form');
  return JSON.stringify(value);
}

/** A high surrogate with no low one after it, or a low one with no high one before it. */
const loneSurrogate = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** What ES2024's String.prototype.isWellFormed answers (our TypeScript lib is ES2023): no lone surrogate. */
function isWellFormed(value: string): boolean {
  return !loneSurrogate.test(value);
}
