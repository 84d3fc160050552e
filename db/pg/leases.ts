import type pg from 'pg';
import { type HeldLease, type LeaseHolding, type Leases, refuseBadLeaseAsk, refuseBadTakeOver } from '../port/leases.ts';
import { pgQuery } from './pool.ts';

// Background-work leases on PostgreSQL, as db/leases.ts keeps them on SQLite: each call one
// statement on the pool, committed on its own. The clock is the database's, the one every server
// on it shares, so servers whose own clocks disagree still agree on when a lease lapses.

/** Now on the database's clock, in ms. */
const NOW_MS = 'floor(extract(epoch FROM clock_timestamp()) * 1000)::int8';

/**
 * Take or renew ($1 name, $2 holder, $3 TTL in ms): a new row at epoch 1; an existing one only when
 * it is ours, given back or expired, its epoch one more when its holder changes. Under READ
 * COMMITTED the upsert locks the row and judges its WHERE on the newest committed version, so two
 * servers racing leave one holder.
 */
export const PG_ACQUIRE_SQL = `INSERT INTO work_leases (name, holder, epoch, expires_ms) VALUES ($1, $2, 1, ${NOW_MS} + $3::int8)
ON CONFLICT (name) DO UPDATE SET
  epoch = CASE WHEN work_leases.holder = excluded.holder THEN work_leases.epoch ELSE work_leases.epoch + 1 END,
  holder = excluded.holder,
  expires_ms = excluded.expires_ms
WHERE work_leases.holder = excluded.holder OR work_leases.expires_ms <= excluded.expires_ms - $3::int8
RETURNING name, holder, epoch, expires_ms AS "expiresMs"`;

/**
 * Take over ($1 name, $2 new holder, $3 TTL in ms) from the holder ($4) at the epoch ($5) read:
 * under READ COMMITTED a second taker waits on the row's lock and judges the WHERE on the first's
 * row, which names another holder, so it updates nothing.
 */
export const PG_TAKE_OVER_SQL = `UPDATE work_leases SET holder = $2, epoch = epoch + 1, expires_ms = ${NOW_MS} + $3::int8
WHERE name = $1 AND holder = $4 AND epoch = $5
RETURNING name, holder, epoch, expires_ms AS "expiresMs"`;

const HELD_NOW_SQL = `SELECT name, holder, epoch, expires_ms AS "expiresMs" FROM work_leases WHERE name = $1 AND holder <> '' AND expires_ms > ${NOW_MS}`;
const RELEASE_SQL = "UPDATE work_leases SET holder = '', expires_ms = 0 WHERE name = $1 AND holder = $2 AND epoch = $3";
const CHECK_SQL = `SELECT 1 AS held FROM work_leases WHERE name = $1 AND holder = $2 AND epoch = $3 AND expires_ms > ${NOW_MS}`;
const COUNT_HELD_SQL = `SELECT count(*) AS held FROM work_leases WHERE substr(name, 1, length($1)) = $1 AND holder <> '' AND expires_ms > ${NOW_MS}`;

/** Leases in a PostgreSQL database, shared by every server on it. */
export class PgLeases implements Leases {
  readonly #pool: pg.Pool;

  constructor(options: { pool: pg.Pool }) {
    this.#pool = options.pool;
  }

  /** Run one statement on the pool; its errors come out as the port's. */
  protected query<R extends pg.QueryResultRow>(text: string, values: unknown[]): Promise<pg.QueryResult<R>> {
    return pgQuery<R>(this.#pool, text, values);
  }

  /** The take-or-renew statement: PG_ACQUIRE_SQL, unless a store over the same table says otherwise. */
  protected acquireSql(): string {
    return PG_ACQUIRE_SQL;
  }

  async acquire(name: string, holder: string, ttlMs: number): Promise<HeldLease | null> {
    refuseBadLeaseAsk(name, holder, ttlMs);
    return (await this.query<HeldLease>(this.acquireSql(), [name, holder, ttlMs])).rows[0] ?? null;
  }

  /** The take-over statement: PG_TAKE_OVER_SQL, unless a store over the same table says otherwise. */
  protected takeOverSql(): string {
    return PG_TAKE_OVER_SQL;
  }

  async takeOver(name: string, holder: string, ttlMs: number, from: LeaseHolding): Promise<HeldLease | null> {
    refuseBadTakeOver(name, holder, ttlMs, from);
    return (await this.query<HeldLease>(this.takeOverSql(), [name, holder, ttlMs, from.holder, from.epoch])).rows[0] ?? null;
  }

  async heldNow(name: string): Promise<HeldLease | null> {
    return (await this.query<HeldLease>(HELD_NOW_SQL, [name])).rows[0] ?? null;
  }

  async release(name: string, holder: string, epoch: number): Promise<boolean> {
    return (await this.query(RELEASE_SQL, [name, holder, epoch])).rowCount === 1;
  }

  async check(name: string, holder: string, epoch: number): Promise<boolean> {
    return (await this.query(CHECK_SQL, [name, holder, epoch])).rows.length === 1;
  }

  async countHeld(prefix: string): Promise<number> {
    return (await this.query<{ held: number }>(COUNT_HELD_SQL, [prefix])).rows[0]?.held ?? 0;
  }

  /** The pool is its opener's to end. */
  async close(): Promise<void> {}
}
