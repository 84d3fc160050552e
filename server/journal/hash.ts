import { hash as digestOnce } from 'node:crypto';
import type { Entry, EntryEnvelope } from '../../shared/entries.ts';
import type { Json, JsonObject } from '../../shared/json.ts';
import { limits } from '../../shared/limits.ts';
import { canonical, canonicalWithoutHash } from '../../shared/receipts/canonical.ts';

// The canonical writer lives in shared/, where a browser verifying a receipt uses the same one;
// here it is paired with Node's one-shot SHA-256, the hashing every journal read and append does.

export { canonical };

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

/** The domain of the global chain's hashes: a hash made for anything else can never pass for one. */
export const GLOBAL_CHAIN_CONTEXT = 'interlock-journal-global-v1';

/**
 * The global hash of the entry stored at `seq`: SHA-256 hex of
 * `interlock-journal-global-v1\n<previous global hash, or "none">\n<seq>\n<entry hash>`. Each one
 * commits to every entry before it in journal order, whichever chain it is on, so an entry
 * deleted, inserted or moved anywhere changes every global hash after it.
 */
export function globalHashOf(previous: string | null, seq: number, entryHash: string): string {
  return sha256Hex(`${GLOBAL_CHAIN_CONTEXT}\n${previous ?? 'none'}\n${seq}\n${entryHash}`);
}
