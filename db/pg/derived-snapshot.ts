import type pg from 'pg';
import { bytesHash, storedRowBytes } from '../derived-digest.ts';
import type { DerivedCursor, DerivedDigest, DerivedRowHash, DerivedSnapshot } from '../port/derived.ts';
import { DERIVED_SQL, type KeyedRow } from './derived-queries.ts';
import { checkIn, checkOut, portErrorOfPg } from './pool.ts';

// The derived tables as they stood at one moment, on PostgreSQL: a client of the pool of its own
// holds a REPEATABLE READ READ ONLY transaction, whose one snapshot every page reads while the
// other clients go on writing (a reader takes no lock a writer waits for). Rows are read a page at
// a time in the primary key's order, each hashed over its body's text as stored.

/**
 * How long the snapshot's transaction may sit idle between two pages before the server ends it,
 * in ms. The check reads it a slice at a time, between other work, so the pool's own limit (ten
 * seconds, for writers holding locks) is too short; a snapshot holds no lock, only the rows older
 * versions, which vacuum keeps while it lasts.
 */
export const SNAPSHOT_IDLE_MS = 600_000;

/** Runs one statement: on the snapshot's client, or for a store that reads live, on the pool. */
export type SnapshotQuery = <R extends pg.QueryResultRow>(text: string, values: unknown[]) => Promise<R[]>;

/** What was thrown, as an Error to hand back with a client. */
const errorOf = (thrown: unknown): Error => (thrown instanceof Error ? thrown : new Error(String(thrown)));

const hashOf = (row: KeyedRow): DerivedRowHash => ({
  view: row.view,
  key: row.key,
  hash: bytesHash(storedRowBytes(row.view, row.key, row.ord, row.open === 1, row.body)),
});

/**
 * The tables as `query` reads them, a page at a time: one moment's only while `query` runs inside
 * a transaction whose snapshot is fixed from before this call until `done`, which is called once
 * (when closed, when every row was read, or when a read fails).
 */
export async function pagedPgSnapshot(query: SnapshotQuery, done: (error?: Error) => void): Promise<DerivedSnapshot> {
  let closed = false;
  const close = (error?: Error) => {
    if (closed) return;
    closed = true;
    done(error);
  };
  let cursor: DerivedCursor | null;
  let digests: DerivedDigest[];
  try {
    cursor = (await query<DerivedCursor>(DERIVED_SQL.cursor, []))[0] ?? null;
    digests = await query<DerivedDigest>(DERIVED_SQL.digests, []);
  } catch (error) {
    close(errorOf(error));
    throw portErrorOfPg(error);
  }
  let after: { view: string; key: string } | null = null;
  return {
    cursor,
    digests,
    async next(limit) {
      if (closed) return [];
      let page: KeyedRow[];
      try {
        page = after === null ? await query<KeyedRow>(DERIVED_SQL.firstPage, [limit]) : await query<KeyedRow>(DERIVED_SQL.nextPage, [after.view, after.key, limit]);
      } catch (error) {
        close(errorOf(error));
        throw portErrorOfPg(error);
      }
      const last = page.at(-1);
      if (last === undefined) close();
      else after = { view: last.view, key: last.key };
      return page.map(hashOf);
    },
    close: () => close(),
  };
}

/** A snapshot of the derived tables read by a client of `pool` of its own, in a REPEATABLE READ READ ONLY transaction. */
export async function openPgSnapshot(pool: pg.Pool): Promise<DerivedSnapshot> {
  const client = await checkOut(pool);
  const finish = (error?: Error) => {
    if (error !== undefined) {
      checkIn(client, error);
      return;
    }
    // close() answers at once; the read transaction ends behind it, and a client whose COMMIT
    // failed is ended rather than given back.
    client.query('COMMIT').then(
      () => checkIn(client),
      (commitError: Error) => checkIn(client, commitError),
    );
  };
  try {
    await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    await client.query(`SET LOCAL idle_in_transaction_session_timeout = ${SNAPSHOT_IDLE_MS}`);
  } catch (error) {
    checkIn(client, errorOf(error));
    throw portErrorOfPg(error);
  }
  return pagedPgSnapshot(async (text, values) => (await client.query(text, values)).rows, finish);
}
