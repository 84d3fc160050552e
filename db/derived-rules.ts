import { canonical } from '../shared/receipts/canonical.ts';
import { isJsonObject, type JsonObject } from '../shared/json.ts';
import { type DerivedBatch, type DerivedCursor, type DerivedDigest, type DerivedListOptions, type DerivedRowHash, type DerivedSnapshot, DIGEST_MARK_EVERY } from './port/derived.ts';
import { DerivedInputError } from './port/errors.ts';

// The rules of the derived tables over any store: what a batch and a list may ask, the order rows
// list in, and when the digests are recorded. Both stores check a batch whole before they write
// anything of it, so a bad change never leaves half a batch behind.

/** A view's name: a word of ASCII letters, digits and `_.:-` (`ledger`, `inbox.closed`), so every store sorts names alike. */
const VIEW_NAME = /^[A-Za-z][A-Za-z0-9_.:-]{0,63}$/;

const encoder = new TextEncoder();

/**
 * Keys in the order SQLite (BINARY) and PostgreSQL (COLLATE "C") compare text: by their UTF-8
 * bytes. JavaScript's `<` compares UTF-16 units, which differs for characters past U+FFFF.
 */
export function compareKeys(a: string, b: string): number {
  if (a === b) return 0;
  // Up to their first differing unit both orders agree; there, a unit below the surrogates is its
  // own code point, and code points order as their UTF-8 bytes do. Only two units at or past
  // U+D800 (a surrogate against U+E000–U+FFFF) need the bytes.
  const length = Math.min(a.length, b.length);
  let i = 0;
  while (i < length && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  if (i === length) return a.length < b.length ? -1 : 1;
  const unitA = a.charCodeAt(i);
  const unitB = b.charCodeAt(i);
  if (Math.min(unitA, unitB) < 0xd800) return unitA < unitB ? -1 : 1;
  return compareBytes(a, b);
}

function compareBytes(a: string, b: string): number {
  const x = encoder.encode(a);
  const y = encoder.encode(b);
  const length = Math.min(x.length, y.length);
  for (let i = 0; i < length; i++) if (x[i] !== y[i]) return x[i]! < y[i]! ? -1 : 1;
  return x.length < y.length ? -1 : 1;
}

/** Rows ordered by `order`, then `key`: -1, 0 or 1. */
export function compareRows(a: { order: number; key: string }, b: { order: number; key: string }): number {
  if (a.order !== b.order) return a.order < b.order ? -1 : 1;
  return compareKeys(a.key, b.key);
}

/** True when a batch from `fromSeq` to `toSeq` reaches or passes a multiple of DIGEST_MARK_EVERY. */
export function marksBetween(fromSeq: number, toSeq: number): boolean {
  return Math.floor(toSeq / DIGEST_MARK_EVERY) > Math.floor(fromSeq / DIGEST_MARK_EVERY);
}

const wholeAtLeastZero = (value: unknown): boolean => typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;

/**
 * Each change's row body as canonical JSON, in the batch's order (null for a removal), once the
 * batch is found whole: seqs and sizes whole numbers, the cursor not moving back, view names as
 * above, each row of its change's key with a whole order and a JSON object for a body. Throws
 * DerivedInputError otherwise.
 */
export function checkedBatch(batch: DerivedBatch): Array<string | null> {
  const { fromSeq, to } = batch;
  if (!wholeAtLeastZero(fromSeq) || !wholeAtLeastZero(to?.seq) || !wholeAtLeastZero(to.size)) {
    throw new DerivedInputError('a batch moves the cursor between whole seqs of 0 or more, with a whole size');
  }
  if (to.seq < fromSeq) throw new DerivedInputError(`a batch cannot move the cursor back, from ${fromSeq} to ${to.seq}`);
  if (typeof to.version !== 'string' || to.version.length === 0) throw new DerivedInputError('a batch names the version of the folds that wrote it');
  if (to.globalHash !== null && typeof to.globalHash !== 'string') throw new DerivedInputError('a batch’s global hash is a string, or null at seq 0');
  if (!Array.isArray(batch.changes)) throw new DerivedInputError('a batch’s changes are a list');
  return batch.changes.map((change, i) => {
    if (typeof change.view !== 'string' || !VIEW_NAME.test(change.view)) throw new DerivedInputError(`change ${i}: a view is named by a word of ASCII letters, digits and _.:-, not ${JSON.stringify(change.view)}`);
    if (typeof change.key !== 'string' || change.key.length === 0) throw new DerivedInputError(`change ${i}: a row's key is a non-empty string`);
    const row = change.row;
    if (row === null) return null;
    if (row.key !== change.key) throw new DerivedInputError(`change ${i}: a change of key ${change.key} carries a row of key ${String(row.key)}`);
    if (!Number.isSafeInteger(row.order)) throw new DerivedInputError(`change ${i}: a row's order is a whole number, not ${String(row.order)}`);
    if (typeof row.open !== 'boolean') throw new DerivedInputError(`change ${i}: a row is open or not (a boolean)`);
    if (!isJsonObject(row.body)) throw new DerivedInputError(`change ${i}: a row's body is a JSON object`);
    try {
      return canonical(row.body);
    } catch (error) {
      throw new DerivedInputError(`change ${i}: a row's body has no canonical JSON form`, { cause: error });
    }
  });
}

/** Throws DerivedInputError for a list no store can answer: a limit that is no whole number, a start with no whole order. */
export function checkListOptions(options: DerivedListOptions): void {
  if (options.direction !== 'asc' && options.direction !== 'desc') throw new DerivedInputError('a list runs asc or desc');
  if (!wholeAtLeastZero(options.limit)) throw new DerivedInputError(`a list's limit is a whole number of rows, not ${String(options.limit)}`);
  const after = options.after;
  if (after !== undefined && (!Number.isSafeInteger(after.order) || typeof after.key !== 'string')) {
    throw new DerivedInputError('a list starts after a row named by its whole order and its key');
  }
  const before = options.before;
  if (before !== undefined && (!Number.isSafeInteger(before.order) || typeof before.key !== 'string')) {
    throw new DerivedInputError('a list stops before a row named by its whole order and its key');
  }
  if (options.open !== undefined && typeof options.open !== 'boolean') throw new DerivedInputError('a list of open rows asks open: true or false');
}

/** A row's body read back from its canonical JSON text; a text that is no JSON object is a damaged row, and fails. */
export function parsedBody(text: string): JsonObject {
  const value: unknown = JSON.parse(text);
  if (!isJsonObject(value)) throw new Error('a derived row holds a body that is no JSON object');
  return value;
}

/** A snapshot whose rows' hashes were all read at once: a database in memory has no second connection to read it by. */
export function heldSnapshot(cursor: DerivedCursor | null, digests: DerivedDigest[], rows: DerivedRowHash[]): DerivedSnapshot {
  let at = 0;
  return {
    cursor,
    digests,
    async next(limit) {
      const page = rows.slice(at, at + limit);
      at += page.length;
      return page;
    },
    close() {
      at = rows.length;
    },
  };
}
