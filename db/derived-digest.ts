import { createHash } from 'node:crypto';
import { canonical } from '../shared/receipts/canonical.ts';
import type { DerivedRow } from './port/derived.ts';

// A derived table's digest is order-independent: the sum mod 2^256 of the SHA-256 of each row's
// canonical bytes (RFC 8785, sorted keys). Adding a row adds its hash, removing one subtracts it,
// so a store keeps it as +new −old in the transaction that changes the row, and two tables with
// the same rows have the same digest whatever order they were written in. It catches divergence
// (a fold that differs, a row dropped or changed); the journal's chains stay the integrity proof.

const MODULUS = 1n << 256n;

/** The digest of no rows. */
export const EMPTY_DIGEST = '0'.repeat(64);

/** The canonical bytes a row's hash is taken over: its view, key, order, open flag and body. */
export function rowBytes(view: string, row: DerivedRow): string {
  return canonical({ view, key: row.key, order: row.order, open: row.open, body: row.body });
}

/**
 * The same bytes as `rowBytes`, for a row as a store keeps it: its body already canonical JSON
 * (`bodyText`), taken as it is rather than parsed and written again. Canonical JSON nests, so
 * the body's own text is the text of the object's `body` member.
 */
export function storedRowBytes(view: string, key: string, order: number, open: boolean, bodyText: string): string {
  return `{"body":${bodyText},"key":${canonical(key)},"open":${open},"order":${canonical(order)},"view":${canonical(view)}}`;
}

/** SHA-256 of canonical bytes, as a number below 2^256. */
export function bytesHash(bytes: string): bigint {
  return BigInt(`0x${createHash('sha256').update(bytes).digest('hex')}`);
}

/** SHA-256 of a row's canonical bytes, as a number below 2^256. */
export function rowHash(view: string, row: DerivedRow): bigint {
  return bytesHash(rowBytes(view, row));
}

/** The digest (64 hex digits) of a sum of row hashes, taken mod 2^256. */
export function digestOfSum(sum: bigint): string {
  return (((sum % MODULUS) + MODULUS) % MODULUS).toString(16).padStart(64, '0');
}

/** `sum` (64 hex digits) moved by +added −removed (row hashes), mod 2^256. */
export function moveDigestBy(sum: string, added: bigint | null, removed: bigint | null): string {
  let value = BigInt(`0x${sum}`);
  if (added !== null) value += added;
  if (removed !== null) value -= removed;
  value = ((value % MODULUS) + MODULUS) % MODULUS;
  return value.toString(16).padStart(64, '0');
}

/** `sum` (64 hex digits) moved by +added −removed, mod 2^256. */
export function moveDigest(sum: string, added: DerivedRow | null, removed: DerivedRow | null, view: string): string {
  return moveDigestBy(sum, added === null ? null : rowHash(view, added), removed === null ? null : rowHash(view, removed));
}
