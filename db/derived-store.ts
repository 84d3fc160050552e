import type Database from 'better-sqlite3';
import { and, asc, desc, eq, gt, sql } from 'drizzle-orm';
import { onConnection } from './connection.ts';
import { bytesHash, EMPTY_DIGEST, moveDigestBy, storedRowBytes } from './derived-digest.ts';
import { DeferredCheckpoints } from './derived-upkeep.ts';
import { allRowsNow, openSnapshot } from './derived-snapshot.ts';
import { ListStatements } from './derived-list.ts';
import { checkedBatch, checkListOptions, heldSnapshot, marksBetween, parsedBody } from './derived-rules.ts';
import type { JournalDb } from './open.ts';
import type { DerivedBatch, DerivedChange, DerivedCursor, DerivedDigest, DerivedListOptions, DerivedRow, DerivedSnapshot, DerivedTables, DigestMark } from './port/derived.ts';
import { StoreReadOnlyError } from './port/errors.ts';
import { derivedCursor, derivedDigests, derivedMarks, derivedRows } from './schema.ts';

// The derived tables on the journal's SQLite connection (db/port/derived.ts). Every call runs under
// the connection's lock (`onConnection`), never inside the journal's own transactions, and a batch
// is one transaction of its own: the cursor moved only where it stands at the batch's start, the
// rows written, each view's digest moved by +new −old, the mark recorded. The SQL is drizzle's
// builders and what PostgreSQL also accepts: upserts by ON CONFLICT, no rowid, keyset pages.

/** The one row of `derived_cursor`. */
const CURSOR_ID = 1;
/** A mark's own row in `derived_marks`: no view is named ''. */
const MARK_ROW = '';

const viewParam = sql.placeholder('view');
const keyParam = sql.placeholder('key');

/** A row as the table keeps it: the body its canonical JSON text. */
interface StoredRow {
  ord: number;
  open: number;
  body: string;
}

/** A view's digest as a batch moves it. */
export interface ViewSum {
  sum: string;
  rows: number;
}

/** The statements a batch runs for each change, compiled once per connection. */
function prepareQueries(db: JournalDb) {
  return {
    row: db
      .select({ ord: derivedRows.ord, open: derivedRows.open, body: derivedRows.body })
      .from(derivedRows)
      .where(and(eq(derivedRows.view, viewParam), eq(derivedRows.key, keyParam)))
      .prepare(),
    putRow: db
      .insert(derivedRows)
      .values({ view: viewParam, key: keyParam, ord: sql.placeholder('ord'), open: sql.placeholder('open'), body: sql.placeholder('body') })
      .onConflictDoUpdate({ target: [derivedRows.view, derivedRows.key], set: { ord: sql`excluded.ord`, open: sql`excluded.open`, body: sql`excluded.body` } })
      .prepare(),
    dropRow: db
      .delete(derivedRows)
      .where(and(eq(derivedRows.view, viewParam), eq(derivedRows.key, keyParam)))
      .prepare(),
    digest: db.select({ sum: derivedDigests.sum, rows: derivedDigests.rows }).from(derivedDigests).where(eq(derivedDigests.view, viewParam)).prepare(),
    putDigest: db
      .insert(derivedDigests)
      .values({ view: viewParam, sum: sql.placeholder('sum'), rows: sql.placeholder('rows') })
      .onConflictDoUpdate({ target: derivedDigests.view, set: { sum: sql`excluded.sum`, rows: sql`excluded.rows` } })
      .prepare(),
  };
}

type Queries = ReturnType<typeof prepareQueries>;

const rowOf = (key: string, stored: StoredRow): DerivedRow => ({ key, order: stored.ord, open: stored.open === 1, body: parsedBody(stored.body) });

/** The hash of a row as stored, over its body's text as it is. */
const storedHash = (view: string, key: string, stored: StoredRow): bigint => bytesHash(storedRowBytes(view, key, stored.ord, stored.open === 1, stored.body));

export class SqliteDerivedTables implements DerivedTables {
  readonly #db: JournalDb;
  readonly #readOnly: boolean;
  #queries: Queries | null = null;
  readonly #lists: ListStatements;
  /** The statements of `storedHashes`, by how many views they name. */
  readonly #rowsOfKeysStatements = new Map<number, Database.Statement<string[], StoredRow & { view: string; key: string }>>();
  /** Read-only only: whether the file has the tables at all (one an older Interlock wrote may not). */
  #present: boolean | null = null;
  readonly #deferred: DeferredCheckpoints;

  /**
   * `readOnly`: the storage was opened read-only, so `advance` and `reset` are refused with
   * StoreReadOnlyError. `checkpointDelayMs`: how long the checkpoint after `deferUpkeep` waits.
   */
  constructor(db: JournalDb, options: { readOnly?: boolean; checkpointDelayMs?: number } = {}) {
    this.#db = db;
    this.#readOnly = options.readOnly === true;
    this.#lists = new ListStatements(db);
    this.#deferred = new DeferredCheckpoints(db.$client, { delayMs: options.checkpointDelayMs });
  }

  /** The write-ahead log's checkpoints put off while `fn` runs, then done once in a worker (db/derived-upkeep.ts). */
  deferUpkeep<T>(fn: () => Promise<T>): Promise<T> {
    return this.#deferred.run(fn);
  }

  /** The checkpoint after the last deferral, once done. */
  get upkeepSettled(): Promise<void> {
    return this.#deferred.settled;
  }

  /** The connection's drizzle handle, for the statements a batch runs. */
  protected get db(): JournalDb {
    return this.#db;
  }

  /** Run `fn` on the journal's connection, under its lock (`onConnection`). */
  #locked<T>(fn: () => Promise<T>): Promise<T> {
    return onConnection(this.#db.$client, fn);
  }

  /** Compiled on first use: a read-only file of an older schema has no tables to compile them on. */
  protected get queries(): Queries {
    this.#queries ??= prepareQueries(this.#db);
    return this.#queries;
  }

  /** False for a file opened read-only that an Interlock before the derived tables wrote: it has none, as if never built. */
  #tablesPresent(): boolean {
    if (!this.#readOnly) return true;
    this.#present ??= this.#db.get<{ n: number }>(sql`SELECT count(*) AS n FROM sqlite_master WHERE type = 'table' AND name = 'derived_cursor'`).n === 1;
    return this.#present;
  }

  #refuseReadOnly(what: string): void {
    if (this.#readOnly) throw new StoreReadOnlyError(`the derived tables were opened read-only: ${what} writes nothing`);
  }

  cursor(): Promise<DerivedCursor | null> {
    return this.#locked(async () => (this.#tablesPresent() ? this.readCursor() : null));
  }

  /** The cursor as it stands, read on the connection (inside a transaction when called from one). */
  protected readCursor(): DerivedCursor | null {
    const row = this.#db
      .select({ seq: derivedCursor.seq, globalHash: derivedCursor.globalHash, size: derivedCursor.size, version: derivedCursor.version })
      .from(derivedCursor)
      .where(eq(derivedCursor.id, CURSOR_ID))
      .get();
    return row ?? null;
  }

  advance(batch: DerivedBatch): Promise<boolean> {
    return this.#locked(async () => {
      this.#refuseReadOnly('advance');
      const bodies = checkedBatch(batch);
      return this.#db.transaction(
        () => {
          if (!this.moveCursor(batch)) return false;
          const sums = new Map<string, ViewSum>();
          for (const [i, change] of batch.changes.entries()) this.#apply(change, bodies[i] ?? null, sums);
          for (const [view, { sum, rows }] of sums) this.queries.putDigest.run({ view, sum, rows });
          if (marksBetween(batch.fromSeq, batch.to.seq)) this.#mark(batch.to);
          this.#deferred.wrote(batch.changes.length);
          return true;
        },
        { behavior: 'immediate' },
      );
    });
  }

  /**
   * Move the cursor to `batch.to` where it stands at `batch.fromSeq`, inside the batch's
   * transaction: true when it moved. From 0, the first row is inserted when there is none; the
   * row's fixed id means two processes cannot both insert it.
   */
  protected moveCursor(batch: DerivedBatch): boolean {
    const { seq, globalHash, size, version } = batch.to;
    const moved = this.#db
      .update(derivedCursor)
      .set({ seq, globalHash, size, version })
      .where(and(eq(derivedCursor.id, CURSOR_ID), eq(derivedCursor.seq, batch.fromSeq)))
      .run();
    if (moved.changes === 1) return true;
    if (batch.fromSeq !== 0) return false;
    const inserted = this.#db.insert(derivedCursor).values({ id: CURSOR_ID, seq, globalHash, size, version }).onConflictDoNothing().run();
    return inserted.changes === 1;
  }

  /** One change: the old row read, the new one written (or the old removed), the view's digest moved by +new −old. */
  #apply(change: DerivedChange, body: string | null, sums: Map<string, ViewSum>): void {
    const { view, key } = change;
    const old = this.queries.row.get({ view, key }) ?? null;
    let stored: StoredRow | null = null;
    if (change.row !== null && body !== null) {
      stored = { ord: change.row.order, open: change.row.open ? 1 : 0, body };
      this.queries.putRow.run({ view, key, ...stored });
    } else if (old !== null) {
      this.queries.dropRow.run({ view, key });
    }
    const before = sums.get(view) ?? this.queries.digest.get({ view }) ?? { sum: EMPTY_DIGEST, rows: 0 };
    sums.set(view, this.moveSum(before, stored === null ? null : storedHash(view, key, stored), old === null ? null : storedHash(view, key, old)));
  }

  /** A view's digest moved by +added −removed (row hashes), and its rows counted. */
  protected moveSum(sum: ViewSum, added: bigint | null, removed: bigint | null): ViewSum {
    return { sum: moveDigestBy(sum.sum, added, removed), rows: sum.rows + (added === null ? 0 : 1) - (removed === null ? 0 : 1) };
  }

  /** Record the digests as they stand now with the cursor at `to`: the mark's own row, then one per view. */
  #mark(to: DerivedCursor): void {
    const rows = [{ seq: to.seq, view: MARK_ROW, sum: EMPTY_DIGEST, rows: 0, globalHash: to.globalHash }];
    for (const digest of this.#digests()) rows.push({ seq: to.seq, view: digest.view, sum: digest.sum, rows: digest.rows, globalHash: to.globalHash });
    this.#db.insert(derivedMarks).values(rows).run();
  }

  reset(version: string): Promise<void> {
    return this.#locked(async () => {
      this.#refuseReadOnly('reset');
      this.#db.transaction(
        (tx) => {
          tx.delete(derivedRows).run();
          tx.delete(derivedDigests).run();
          tx.delete(derivedMarks).run();
          const at = { seq: 0, globalHash: null, size: 0, version };
          tx.insert(derivedCursor)
            .values({ id: CURSOR_ID, ...at })
            .onConflictDoUpdate({ target: derivedCursor.id, set: at })
            .run();
        },
        { behavior: 'immediate' },
      );
    });
  }

  get(view: string, key: string): Promise<DerivedRow | null> {
    return this.#locked(async () => {
      if (!this.#tablesPresent()) return null;
      const stored = this.queries.row.get({ view, key });
      return stored === undefined ? null : rowOf(key, stored);
    });
  }

  storedHashes(views: readonly string[], keys: readonly string[]): Promise<Array<Array<bigint | null>>> {
    return this.#locked(async () => {
      if (!this.#tablesPresent() || views.length === 0 || keys.length === 0) return keys.map(() => views.map(() => null));
      // One statement's read: no write comes between the rows.
      const found = new Map<string, Map<string, bigint>>();
      for (const row of this.#rowsOfKeys(views.length).all(JSON.stringify(keys), ...views)) {
        let ofKey = found.get(row.key);
        if (ofKey === undefined) {
          ofKey = new Map();
          found.set(row.key, ofKey);
        }
        ofKey.set(row.view, storedHash(row.view, row.key, row));
      }
      return keys.map((key) => views.map((view) => found.get(key)?.get(view) ?? null));
    });
  }

  /** Compiled on first use, as `queries`: the rows of several views under several keys, each by the primary key. */
  #rowsOfKeys(count: number): Database.Statement<string[], StoredRow & { view: string; key: string }> {
    let statement = this.#rowsOfKeysStatements.get(count);
    if (statement === undefined) {
      statement = this.#db.$client.prepare(`SELECT view, key, ord, open, body FROM derived_rows WHERE key IN (SELECT value FROM json_each(?)) AND view IN (${Array(count).fill('?').join(', ')})`);
      this.#rowsOfKeysStatements.set(count, statement);
    }
    return statement;
  }

  list(view: string, options: DerivedListOptions): Promise<DerivedRow[]> {
    return this.#locked(async () => {
      checkListOptions(options);
      if (!this.#tablesPresent() || options.limit === 0) return [];
      const rows = this.#lists.rows(view, options);
      return rows.map((row) => rowOf(row.key, row));
    });
  }

  digests(): Promise<DerivedDigest[]> {
    return this.#locked(async () => (this.#tablesPresent() ? this.#digests() : []));
  }

  #digests(): DerivedDigest[] {
    return this.#db
      .select({ view: derivedDigests.view, sum: derivedDigests.sum, rows: derivedDigests.rows })
      .from(derivedDigests)
      .where(gt(derivedDigests.rows, 0))
      .orderBy(asc(derivedDigests.view))
      .all();
  }

  marks(): Promise<DigestMark[]> {
    return this.#locked(async () => {
      if (!this.#tablesPresent()) return [];
      const rows = this.#db.select().from(derivedMarks).orderBy(asc(derivedMarks.seq), asc(derivedMarks.view)).all();
      const marks: DigestMark[] = [];
      for (const row of rows) {
        if (row.view === MARK_ROW) marks.push({ seq: row.seq, globalHash: row.globalHash, digests: [] });
        else marks.at(-1)?.digests.push({ view: row.view, sum: row.sum, rows: row.rows });
      }
      return marks;
    });
  }

  newestMark(): Promise<DigestMark | null> {
    return this.#locked(async () => {
      if (!this.#tablesPresent()) return null;
      const newest = this.#db.select().from(derivedMarks).where(eq(derivedMarks.view, MARK_ROW)).orderBy(desc(derivedMarks.seq)).limit(1).get();
      if (newest === undefined) return null;
      const digests = this.#db
        .select({ view: derivedMarks.view, sum: derivedMarks.sum, rows: derivedMarks.rows })
        .from(derivedMarks)
        .where(and(eq(derivedMarks.seq, newest.seq), gt(derivedMarks.view, MARK_ROW)))
        .orderBy(asc(derivedMarks.view))
        .all();
      return { seq: newest.seq, globalHash: newest.globalHash, digests };
    });
  }

  /** Read by a connection of its own, so the journal's goes on writing; a database in memory is read at once. */
  snapshot(): Promise<DerivedSnapshot> {
    return this.#locked(async () => {
      if (!this.#tablesPresent()) return heldSnapshot(null, [], []);
      const client = this.#db.$client;
      return client.memory ? allRowsNow(client) : openSnapshot(client.name);
    });
  }
}
