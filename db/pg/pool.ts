import pg from 'pg';
import { performance } from 'node:perf_hooks';
import { StoreBusyError, StoreClosedError, StoreUnavailableError } from '../port/errors.ts';
import { checkedOut, mustWait, poolWaitedSince } from './timings.ts';

// The connections to PostgreSQL: one pool per process and role, every client of it set up alike.

/** PostgreSQL's type oid for `int8` (bigint): seqs, times in ms, counts. */
const INT8_OID = 20;

/**
 * `int8` as a number, not the string node-postgres gives by default: every seq, ms time and count
 * Interlock keeps fits in 2^53. One that does not is a broken invariant, not a value to round.
 */
export function parseInt8(text: string): number {
  const value = Number(text);
  if (!Number.isSafeInteger(value)) throw new RangeError(`an int8 outside the safe integers: ${text}`);
  return value;
}

/** The type parsers of Interlock's pools: int8 as a number, every other type as node-postgres parses it. Scoped to the pool, not global. */
const types: pg.CustomTypesConfig = {
  getTypeParser: (oid, format) => (oid === INT8_OID && format !== 'binary' ? parseInt8 : pg.types.getTypeParser(oid, format)),
};

/** How a pool is opened: where, and at most how many connections. */
export interface PgPoolOptions {
  /** A postgresql:// URL naming the role, its password, the host and the database. */
  url: string;
  /** Connections the pool may hold at once (`poolMaxDefault` unless given). */
  max?: number;
  /** Named in pg_stat_activity. */
  applicationName?: string;
  /** How long a statement waits for a lock (a write for the head row) before it fails with StoreBusyError, in ms. */
  lockTimeoutMs?: number;
  /**
   * How long the server lets a transaction of this pool sit idle between its statements before it
   * ends the session, in ms. A write holds the head row's lock; if its connection goes silent (no
   * reset reaches the server), every other server's writes would queue behind that lock for as
   * long as TCP keeps the connection, hours by default.
   */
  idleInTransactionTimeoutMs?: number;
  /** How long opening a connection may take before it fails, in ms; unset, as long as the network takes. */
  connectTimeoutMs?: number;
}

/**
 * Connections a server's pool holds at most unless `DATABASE_POOL_MAX` says otherwise. A refund at
 * work (at most `limits.refundsWorkingMax`, 32, per server) holds a connection only for each of its
 * reads and for its group commit's write, so fewer connections than refunds at work serve them: on
 * two cores, pools of 20 committed fewer refunds than pools of 10 (docs/operators/postgresql.md).
 * PostgreSQL's `max_connections` (100 by default, 3 kept for superusers) must hold every server's
 * pool and listening connection, and the tools' (4 each).
 */
export const poolMaxDefault = 10;

/** As SQLite's busy timeout (db/open.ts): a writer waits this long for the head row's lock, then the write is refused as busy. */
export const lockTimeoutMsDefault = 5_000;

/** A write's statements follow one another within milliseconds; ten seconds idle means its process or network is gone. */
export const idleInTransactionTimeoutMsDefault = 10_000;

/**
 * A pool whose clients parse int8 as numbers and commit synchronously: a committed entry records
 * money, so COMMIT returns only once its WAL is on disk (`synchronous_commit = on`, set on each
 * connection so a database default of `off` cannot weaken it). A statement waits at most
 * `lockTimeoutMs` for a lock, and a transaction left idle `idleInTransactionTimeoutMs` (a silent
 * connection holding the head row) is ended by the server, its lock released.
 */
export function openPgPool(options: PgPoolOptions): pg.Pool {
  const lockTimeoutMs = options.lockTimeoutMs ?? lockTimeoutMsDefault;
  const idleMs = options.idleInTransactionTimeoutMs ?? idleInTransactionTimeoutMsDefault;
  for (const [name, ms] of [['lockTimeoutMs', lockTimeoutMs], ['idleInTransactionTimeoutMs', idleMs]] as const) {
    if (!Number.isSafeInteger(ms) || ms < 1) throw new RangeError(`${name} must be a positive integer: ${ms}`);
  }
  const pool = new pg.Pool({
    connectionString: options.url,
    max: options.max ?? poolMaxDefault,
    application_name: options.applicationName ?? 'interlock',
    options: `-c synchronous_commit=on -c lock_timeout=${lockTimeoutMs} -c idle_in_transaction_session_timeout=${idleMs}`,
    types,
    ...(options.connectTimeoutMs === undefined ? {} : { connectionTimeoutMillis: options.connectTimeoutMs }),
  });
  // An idle client that loses its connection emits 'error' on the pool; unhandled, it would end
  // the process. The next checkout gets a new connection, so there is nothing else to do here.
  pool.on('error', () => {});
  pool.on('acquire', checkedOut);
  return pool;
}

const ignoreError = () => {};

/**
 * A client of the pool for a transaction. A connection lost while a client is checked out is
 * emitted as 'error' on the client (the pool listens only to idle ones), which would end the
 * process; the statement in flight rejects with it anyway, so the event itself is ignored.
 */
export async function checkOut(pool: pg.Pool): Promise<pg.PoolClient> {
  let client: pg.PoolClient;
  // Only a checkout that finds every connection busy is timed: the pool's queue.
  const waitFromMs = mustWait(pool) ? performance.now() : null;
  try {
    client = await pool.connect();
  } catch (error) {
    throw portErrorOfPg(error);
  }
  if (waitFromMs !== null) poolWaitedSince(waitFromMs);
  client.on('error', ignoreError);
  return client;
}

/** Give a client back to the pool; with `broken`, the pool ends its connection instead of reusing it. */
export function checkIn(client: pg.PoolClient, broken?: Error): void {
  client.off('error', ignoreError);
  client.release(broken);
}

/** SQLSTATEs worth a retry: the write could not be done now, and nothing of it was kept. */
const BUSY_CODES: ReadonlySet<string> = new Set([
  '40001', // serialization_failure
  '40P01', // deadlock_detected
  '55P03', // lock_not_available
  '57P01', // admin_shutdown
  '57P03', // cannot_connect_now
  '53300', // too_many_connections
]);

/** The network's errors for a connection to the database refused, reset or timed out. */
const NETWORK_CODES: ReadonlySet<string> = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN']);

/** node-postgres's own words for a connection that ended, or could not be made in time. */
const LOST_CONNECTION = /^Connection terminated|^timeout expired|^Client has encountered a connection error and is not queryable/;

/** True when the connection to the database was refused or lost: no answer of the server's, an error of the network's. */
function lostConnection(error: Error): boolean {
  if (error instanceof pg.DatabaseError) return false;
  if ('code' in error && typeof error.code === 'string' && NETWORK_CODES.has(error.code)) return true;
  return LOST_CONNECTION.test(error.message);
}

/** The port's error for what node-postgres raised, so no caller needs to know PostgreSQL's codes. */
export function portErrorOfPg(error: unknown): unknown {
  if (error instanceof Error && 'code' in error && typeof error.code === 'string' && BUSY_CODES.has(error.code)) {
    return new StoreBusyError(error.message, { cause: error });
  }
  if (error instanceof Error && lostConnection(error)) {
    return new StoreUnavailableError(`the database cannot be reached: ${error.message}`, { cause: error });
  }
  if (error instanceof Error && error.message === 'Cannot use a pool after calling end on the pool') {
    return new StoreClosedError('the storage is closed', { cause: error });
  }
  return error;
}

/** One statement on the pool, outside any transaction; its errors come out as the port's. */
export async function pgQuery<R extends pg.QueryResultRow>(pool: pg.Pool, query: string | pg.QueryConfig, values: unknown[] = []): Promise<pg.QueryResult<R>> {
  try {
    return typeof query === 'string' ? await pool.query<R>(query, values) : await pool.query<R>(query);
  } catch (error) {
    throw portErrorOfPg(error);
  }
}

/**
 * `fn` in one transaction on a client of its own, begun by `begin` (e.g. `BEGIN ISOLATION LEVEL
 * READ COMMITTED`) and committed when `fn` resolves. When `fn` or the commit throws, the
 * transaction is rolled back and a client whose rollback failed is ended, not reused; the error
 * comes out as the port's.
 */
export async function inTransaction<T>(pool: pg.Pool, begin: string, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await checkOut(pool);
  let broken: Error | undefined;
  try {
    await client.query(begin);
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    await client.query('ROLLBACK').catch((rollbackError: Error) => {
      broken = rollbackError;
    });
    throw portErrorOfPg(error);
  } finally {
    checkIn(client, broken);
  }
}

/** A pool of Interlock's, as the stores and their tests name it without importing the driver. */
export type PgPool = pg.Pool;
/** One checked-out client of a PgPool. */
export type PgClient = pg.PoolClient;
