import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';
import type { Entry, EntryEnvelope } from '../../shared/entries.ts';
import type { Json, JsonObject } from '../../shared/json.ts';
import { limits } from '../../shared/limits.ts';

/** RFC 8785 canonical JSON of a value: the bytes every hash and signature is taken over. */
export function canonical(value: Json): string {
  const text = canonicalize(value);
  if (text === undefined) throw new TypeError('value has no canonical JSON form');
  return text;
}

/** Lowercase hex SHA-256 of a UTF-8 string. */
export function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/** The hash of an entry: SHA-256 of the canonical JSON of every field except `hash`. */
export function hashEntry(unsealed: Omit<EntryEnvelope, 'hash'> & JsonObject): string {
  const { hash: _ignored, ...rest } = unsealed as JsonObject;
  return sha256Hex(canonical(rest));
}

/** Seal an entry: chain it to `prev` and hash it. */
export function sealEntry(fields: Omit<EntryEnvelope, 'hash'> & JsonObject): Entry {
  const hash = hashEntry(fields);
  return { ...fields, hash } as Entry;
}

/** True when the stored hash of an entry matches its content. */
export function entryHashHolds(entry: Entry): boolean {
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
