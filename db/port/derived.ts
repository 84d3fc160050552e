import type { JsonObject } from '../../shared/json.ts';

// The derived tables: what the views fold from the journal, kept beside it so that a server holds
// only open work in memory and reads history from here. The journal stays the only truth: these
// tables are a cache of a fold of it, tagged with the journal position they include, rebuilt from
// it whenever they are missing or were written by another version of the folds.

/** How often, in journal entries, the digests are recorded with the cursor (`DerivedTables.marks`). */
export const DIGEST_MARK_EVERY = 10_000;

/** One row of a derived table. */
export interface DerivedRow {
  /** The row's key in its view: an effect id, a bucket's name. */
  key: string;
  /** Where it sorts: the journal seq of its chain's first entry, say. Lists order by it, then by key. */
  order: number;
  /** Still open work: a server loads its view's open rows at start and keeps them in memory. */
  open: boolean;
  /** The row's content, as its view shows it. */
  body: JsonObject;
}

/** A change to one row: `row` replaces the view's row at `key`, or removes it when null. */
export interface DerivedChange {
  view: string;
  key: string;
  row: DerivedRow | null;
}

/** Where the tables stand: the last journal entry they include, and the version of the folds that wrote them. */
export interface DerivedCursor {
  /** The seq of the last entry included; 0 before any. */
  seq: number;
  /** The journal's global hash at `seq`; null at 0. */
  globalHash: string | null;
  /** How many entries the journal held through `seq`. */
  size: number;
  /** The version of the views' folds (`server/views/version.ts`): rows of another version are rebuilt. */
  version: string;
}

/** A view's digest: the sum mod 2^256 of the SHA-256 of each row's canonical bytes, and its rows. */
export interface DerivedDigest {
  view: string;
  /** 64 lowercase hex digits. */
  sum: string;
  rows: number;
}

/** The digests as they stood at one cursor: recorded every `DIGEST_MARK_EVERY` entries. */
export interface DigestMark {
  seq: number;
  globalHash: string | null;
  digests: DerivedDigest[];
}

/** One row's hash, over the row as the store keeps it (db/derived-digest.ts): what its view's digest sums. */
export interface DerivedRowHash {
  view: string;
  key: string;
  hash: bigint;
}

/**
 * The tables as they stood at one moment, read a page at a time while others write on: their
 * cursor, each view's digest then, and every row's hash then. Close it when done: a store on disk
 * holds its read open until then.
 */
export interface DerivedSnapshot {
  readonly cursor: DerivedCursor | null;
  /** Each view's digest (views with no row left out), by view name ascending. */
  readonly digests: readonly DerivedDigest[];
  /** The next rows' hashes, at most `limit`, each row of every view once; none when all were read. */
  next(limit: number): Promise<DerivedRowHash[]>;
  close(): void;
}

/** A list of one view's rows, in `order` then `key` (by UTF-8 bytes, db/derived-rules.ts), ascending or descending. */
export interface DerivedListOptions {
  direction: 'asc' | 'desc';
  /** Start after this row (exclusive, in the direction's sense); from the first when absent. */
  after?: { order: number; key: string };
  /** Stop before this row (exclusive, in the direction's sense): a range of keys reads that range only. */
  before?: { order: number; key: string };
  limit: number;
  /** Only the open rows, or only the closed ones; all when absent. */
  open?: boolean;
}

/** One batch the follower writes: the changes of the entries after `fromSeq` through `to.seq`. */
export interface DerivedBatch {
  /** Where the cursor must stand for the batch to apply. */
  fromSeq: number;
  to: DerivedCursor;
  /** Applied in order; a key changed twice ends as its last change. */
  changes: readonly DerivedChange[];
}

/**
 * The derived tables of every view, with their cursor and digests. Any process may advance the
 * cursor: `advance` applies a batch only where the cursor still stands at its `fromSeq`, in one
 * transaction with the cursor's move and the digests' (so a process that lost the race drops its
 * batch, and the tables never hold half of one). Every list has an order with a tie-breaker.
 */
export interface DerivedTables {
  /** Where the tables stand; null when they were never built (or were reset to nothing). */
  cursor(): Promise<DerivedCursor | null>;
  /**
   * Apply a batch and move the cursor to `to`, only if the cursor stands at `fromSeq` (0 matches
   * no cursor at all): true when applied, false when another process moved it first (nothing is
   * written). Each view's digest moves by +new −old in the same transaction, and the digests are
   * recorded as a mark when the batch reaches or passes a multiple of `DIGEST_MARK_EVERY`.
   * A batch no store can keep (db/derived-rules.ts) is refused whole with DerivedInputError.
   */
  advance(batch: DerivedBatch): Promise<boolean>;
  /** Remove every row, digest and mark, and stand the cursor at 0 under `version`: a rebuild starts from it. */
  reset(version: string): Promise<void>;
  get(view: string, key: string): Promise<DerivedRow | null>;
  /**
   * Optional, for the check against the journal: for each of `keys` (at most 200), the row each of
   * `views` holds under it, as the hash of its bytes as stored (what `snapshot` answers for it),
   * null where a view holds none; all read at one moment. A store without it is read by `get`,
   * each row's hash taken over its canonical bytes.
   */
  storedHashes?(views: readonly string[], keys: readonly string[]): Promise<Array<Array<bigint | null>>>;
  list(view: string, options: DerivedListOptions): Promise<DerivedRow[]>;
  /** Each view's digest now (views with no row are left out), by view name ascending. */
  digests(): Promise<DerivedDigest[]>;
  /** The recorded marks, oldest first. */
  marks(): Promise<DigestMark[]>;
  /** The newest recorded mark alone, whatever the history; null when none is. */
  newestMark(): Promise<DigestMark | null>;
  /**
   * The tables as they stand now, every row of every view with its hash as stored, for the check
   * that the rows are what the digests say (server/integrity/derived-check.ts): rows changed
   * under the store, not by `advance`, moved no digest.
   */
  snapshot(): Promise<DerivedSnapshot>;
}
