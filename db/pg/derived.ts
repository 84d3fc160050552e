import type pg from 'pg';
import { bytesHash, EMPTY_DIGEST, moveDigestBy, storedRowBytes } from '../derived-digest.ts';
import { checkedBatch, checkListOptions, marksBetween, parsedBody } from '../derived-rules.ts';
import type { ViewSum } from '../derived-store.ts';
import type { DerivedBatch, DerivedCursor, DerivedDigest, DerivedListOptions, DerivedRow, DerivedSnapshot, DerivedTables, DigestMark } from '../port/derived.ts';
import { DERIVED_SQL, type KeyedRow, listQuery, type StoredRow } from './derived-queries.ts';
import { openPgSnapshot } from './derived-snapshot.ts';
import { inTransaction, pgQuery } from './pool.ts';

// The derived tables on PostgreSQL (db/port/derived.ts), as SQLite's (db/derived-store.ts) with
// the same rules (db/derived-rules.ts). A batch is one READ COMMITTED transaction whose first
// statement moves the cursor only where it stands at the batch's start: it locks the cursor's row,
// so the batches and resets of every process queue there, and a writer that waited finds the seq
// the winner left, moves nothing and drops its batch. Under that lock each later statement sees
// every batch committed before: the old rows are read, the changes applied in order, the rows
// and each view's digest (+new −old) written, and the mark recorded, in the same transaction.

const READ_COMMITTED = 'BEGIN ISOLATION LEVEL READ COMMITTED';

/** A mark's own row in `derived_marks`: no view is named ''. */
const MARK_ROW = '';

const rowOf = (key: string, stored: StoredRow): DerivedRow => ({ key, order: stored.ord, open: stored.open === 1, body: parsedBody(stored.body) });

/** The hash of a row as stored, over its body's text as it is. */
const storedHash = (view: string, key: string, stored: StoredRow): bigint => bytesHash(storedRowBytes(view, key, stored.ord, stored.open === 1, stored.body));

/** Each (view, key) a batch touches, and what it holds: read before the batch, then as its changes leave it. */
type RowsByView = Map<string, Map<string, StoredRow | null>>;

/** Marks as the port answers them, from their rows in (seq, view) order: each mark's own row, then its views'. */
function marksOf(rows: Array<{ seq: number; view: string; sum: string; rows: number; globalHash: string | null }>): DigestMark[] {
  const marks: DigestMark[] = [];
  for (const row of rows) {
    if (row.view === MARK_ROW) marks.push({ seq: row.seq, globalHash: row.globalHash, digests: [] });
    else marks.at(-1)?.digests.push({ view: row.view, sum: row.sum, rows: row.rows });
  }
  return marks;
}

/** The derived tables of every view on PostgreSQL, through one pool: any process's pool may advance them. */
export class PgDerivedTables implements DerivedTables {
  readonly #pool: pg.Pool;

  constructor(options: { pool: pg.Pool }) {
    this.#pool = options.pool;
  }

  /** The pool the tables are read and written through. */
  protected get pool(): pg.Pool {
    return this.#pool;
  }

  async #query<R extends pg.QueryResultRow>(query: string | pg.QueryConfig, values: unknown[] = []): Promise<R[]> {
    return (await pgQuery<R>(this.#pool, query, values)).rows;
  }

  async cursor(): Promise<DerivedCursor | null> {
    return (await this.#query<DerivedCursor>(DERIVED_SQL.cursor))[0] ?? null;
  }

  async advance(batch: DerivedBatch): Promise<boolean> {
    const bodies = checkedBatch(batch);
    return inTransaction(this.#pool, READ_COMMITTED, async (client) => {
      if (!(await this.moveCursor(client, batch))) return false;
      await this.#apply(client, batch, bodies);
      if (marksBetween(batch.fromSeq, batch.to.seq)) await client.query(DERIVED_SQL.mark, [batch.to.seq, EMPTY_DIGEST, batch.to.globalHash]);
      return true;
    });
  }

  /**
   * Move the cursor to `batch.to` where it stands at `batch.fromSeq`, as the batch's first
   * statement: true when it moved. From 0, the row is inserted when there is none; its fixed id
   * means two processes cannot both insert it.
   */
  protected async moveCursor(client: pg.PoolClient, batch: DerivedBatch): Promise<boolean> {
    const { seq, globalHash, size, version } = batch.to;
    const text = batch.fromSeq === 0 ? DERIVED_SQL.moveCursorFromZero : DERIVED_SQL.moveCursor;
    const values = batch.fromSeq === 0 ? [seq, globalHash, size, version] : [seq, globalHash, size, version, batch.fromSeq];
    return (await client.query(text, values)).rowCount === 1;
  }

  /**
   * The batch's changes, in order, over the rows they touch as read under the cursor's lock: each
   * view's digest moved by +new −old for every change, then the rows each key ends as written (or
   * removed) and the digests, a statement each.
   */
  async #apply(client: pg.PoolClient, batch: DerivedBatch, bodies: Array<string | null>): Promise<void> {
    if (batch.changes.length === 0) return;
    const rows: RowsByView = new Map();
    for (const { view, key } of batch.changes) {
      if (!rows.has(view)) rows.set(view, new Map());
      rows.get(view)!.set(key, null);
    }
    const pairs = [...rows].flatMap(([view, keys]) => [...keys.keys()].map((key) => [view, key] as const));
    const found = await client.query<KeyedRow>(DERIVED_SQL.rowsOfPairs, [pairs.map(([view]) => view), pairs.map(([, key]) => key)]);
    for (const { view, key, ord, open, body } of found.rows) rows.get(view)!.set(key, { ord, open, body });
    const before = new Set(found.rows.map(({ view, key }) => JSON.stringify([view, key])));
    const sums = new Map<string, ViewSum>();
    for (const digest of (await client.query<DerivedDigest>(DERIVED_SQL.digestsOf, [[...rows.keys()]])).rows) sums.set(digest.view, { sum: digest.sum, rows: digest.rows });

    for (const [i, { view, key, row }] of batch.changes.entries()) {
      const ofView = rows.get(view)!;
      const old = ofView.get(key) ?? null;
      const body = bodies[i] ?? null;
      const stored = row !== null && body !== null ? { ord: row.order, open: row.open ? 1 : 0, body } : null;
      ofView.set(key, stored);
      const sum = sums.get(view) ?? { sum: EMPTY_DIGEST, rows: 0 };
      sums.set(view, this.moveSum(sum, stored === null ? null : storedHash(view, key, stored), old === null ? null : storedHash(view, key, old)));
    }

    const put: KeyedRow[] = [];
    const dropped: Array<[string, string]> = [];
    for (const [view, keys] of rows) {
      for (const [key, stored] of keys) {
        if (stored !== null) put.push({ view, key, ...stored });
        else if (before.has(JSON.stringify([view, key]))) dropped.push([view, key]);
      }
    }
    if (put.length > 0) {
      const columns = [put.map((r) => r.view), put.map((r) => r.key), put.map((r) => r.ord), put.map((r) => r.open), put.map((r) => r.body)];
      await client.query(DERIVED_SQL.putRows, columns);
    }
    if (dropped.length > 0) await client.query(DERIVED_SQL.dropRows, [dropped.map(([view]) => view), dropped.map(([, key]) => key)]);
    const views = [...sums.keys()];
    await client.query(DERIVED_SQL.putDigests, [views, views.map((view) => sums.get(view)!.sum), views.map((view) => sums.get(view)!.rows)]);
  }

  /** A view's digest moved by +added −removed (row hashes), and its rows counted. */
  protected moveSum(sum: ViewSum, added: bigint | null, removed: bigint | null): ViewSum {
    return { sum: moveDigestBy(sum.sum, added, removed), rows: sum.rows + (added === null ? 0 : 1) - (removed === null ? 0 : 1) };
  }

  async reset(version: string): Promise<void> {
    await inTransaction(this.#pool, READ_COMMITTED, async (client) => {
      // The cursor's row first: its lock waits for a batch in flight, and holds off the next.
      await client.query(DERIVED_SQL.resetCursor, [version]);
      for (const text of DERIVED_SQL.clear) await client.query(text);
    });
  }

  async get(view: string, key: string): Promise<DerivedRow | null> {
    const stored = (await this.#query<StoredRow>(DERIVED_SQL.row, [view, key]))[0];
    return stored === undefined ? null : rowOf(key, stored);
  }

  async storedHashes(views: readonly string[], keys: readonly string[]): Promise<Array<Array<bigint | null>>> {
    if (views.length === 0 || keys.length === 0) return keys.map(() => views.map(() => null));
    // One statement's read: no write comes between the rows.
    const found = new Map<string, Map<string, bigint>>();
    for (const row of await this.#query<KeyedRow>(DERIVED_SQL.rowsOfKeys, [[...views], [...keys]])) {
      let ofKey = found.get(row.key);
      if (ofKey === undefined) {
        ofKey = new Map();
        found.set(row.key, ofKey);
      }
      ofKey.set(row.view, storedHash(row.view, row.key, row));
    }
    return keys.map((key) => views.map((view) => found.get(key)?.get(view) ?? null));
  }

  async list(view: string, options: DerivedListOptions): Promise<DerivedRow[]> {
    checkListOptions(options);
    if (options.limit === 0) return [];
    const rows = await this.#query<StoredRow & { key: string }>(listQuery(view, options));
    return rows.map((row) => rowOf(row.key, row));
  }

  async digests(): Promise<DerivedDigest[]> {
    return this.#query<DerivedDigest>(DERIVED_SQL.digests);
  }

  async marks(): Promise<DigestMark[]> {
    return marksOf(await this.#query(DERIVED_SQL.marks));
  }

  async newestMark(): Promise<DigestMark | null> {
    return marksOf(await this.#query(DERIVED_SQL.newestMark))[0] ?? null;
  }

  /** Read by a client of the pool of its own, in a snapshot of its own, so the other clients go on writing. */
  snapshot(): Promise<DerivedSnapshot> {
    return openPgSnapshot(this.#pool);
  }
}
