import Database from 'better-sqlite3';
import { portErrorOf } from './connection.ts';
import { followDeferral } from './derived-upkeep.ts';
import { type HeldLease, type LeaseHolding, type Leases, refuseBadLeaseAsk, refuseBadTakeOver } from './port/leases.ts';

// Background-work leases in the journal's SQLite file (db/port/leases.ts says what they are for).
// Each call is one statement, the same SQL PostgreSQL runs (db/pg/leases.ts) but for its clock: a
// lease is taken by an upsert whose WHERE says when it may be, so two processes racing for it
// leave one holder, and the epoch moves only when the holder does.

/** A lease call waits at most this long for another process's write (a journal batch and its fsync); past it the call fails as busy and the next round tries again. */
const BUSY_TIMEOUT_MS = 250;

/**
 * Take or renew: a new row at epoch 1; an existing one only when it is ours, given back or
 * expired, its epoch one more when its holder changes. In SET, the old row's columns are read.
 */
export const ACQUIRE_SQL = `INSERT INTO work_leases (name, holder, epoch, expires_ms) VALUES ($name, $holder, 1, $expiresMs)
ON CONFLICT (name) DO UPDATE SET
  epoch = CASE WHEN work_leases.holder = excluded.holder THEN work_leases.epoch ELSE work_leases.epoch + 1 END,
  holder = excluded.holder,
  expires_ms = excluded.expires_ms
WHERE work_leases.holder = excluded.holder OR work_leases.expires_ms <= $nowMs
RETURNING name, holder, epoch, expires_ms AS expiresMs`;

/** Take over from the holder at the epoch read, whether or not the lease lapsed; a second taker finds another holder and updates nothing. */
export const TAKE_OVER_SQL = `UPDATE work_leases SET holder = $holder, epoch = epoch + 1, expires_ms = $expiresMs
WHERE name = $name AND holder = $fromHolder AND epoch = $fromEpoch
RETURNING name, holder, epoch, expires_ms AS expiresMs`;

const HELD_NOW_SQL = "SELECT name, holder, epoch, expires_ms AS expiresMs FROM work_leases WHERE name = $name AND holder <> '' AND expires_ms > $nowMs";
const RELEASE_SQL = "UPDATE work_leases SET holder = '', expires_ms = 0 WHERE name = $name AND holder = $holder AND epoch = $epoch";
const CHECK_SQL = 'SELECT 1 AS held FROM work_leases WHERE name = $name AND holder = $holder AND epoch = $epoch AND expires_ms > $nowMs';
const COUNT_HELD_SQL = "SELECT count(*) AS held FROM work_leases WHERE substr(name, 1, length($prefix)) = $prefix AND holder <> '' AND expires_ms > $nowMs";

/**
 * Leases on a connection of their own to the journal's file, opened at the first call: its commits
 * do not wait for the disk (`synchronous = NORMAL`, as the budget's slots: a lease lost in a crash
 * only lapses), and it waits at most `BUSY_TIMEOUT_MS` for the write lock. The clock is this
 * machine's, which every process on the file shares.
 */
export class SqliteLeases implements Leases {
  readonly #file: string;
  readonly #nowMs: () => number;
  #sqlite: Database.Database | null = null;

  constructor(file: string, options: { nowMs?: () => number } = {}) {
    this.#file = file;
    this.#nowMs = options.nowMs ?? Date.now;
  }

  /** The take-or-renew statement: ACQUIRE_SQL, unless a store over the same table says otherwise. */
  protected acquireSql(): string {
    return ACQUIRE_SQL;
  }

  async acquire(name: string, holder: string, ttlMs: number): Promise<HeldLease | null> {
    refuseBadLeaseAsk(name, holder, ttlMs);
    return this.#run((sqlite) => {
      const nowMs = this.#nowMs();
      return sqlite.prepare<Record<string, unknown>, HeldLease>(this.acquireSql()).get({ name, holder, nowMs, expiresMs: nowMs + ttlMs }) ?? null;
    });
  }

  /** The take-over statement: TAKE_OVER_SQL, unless a store over the same table says otherwise. */
  protected takeOverSql(): string {
    return TAKE_OVER_SQL;
  }

  async takeOver(name: string, holder: string, ttlMs: number, from: LeaseHolding): Promise<HeldLease | null> {
    refuseBadTakeOver(name, holder, ttlMs, from);
    return this.#run((sqlite) => {
      const expiresMs = this.#nowMs() + ttlMs;
      const values = { name, holder, expiresMs, fromHolder: from.holder, fromEpoch: from.epoch };
      return sqlite.prepare<Record<string, unknown>, HeldLease>(this.takeOverSql()).get(values) ?? null;
    });
  }

  async heldNow(name: string): Promise<HeldLease | null> {
    return this.#run((sqlite) => sqlite.prepare<Record<string, unknown>, HeldLease>(HELD_NOW_SQL).get({ name, nowMs: this.#nowMs() }) ?? null);
  }

  async release(name: string, holder: string, epoch: number): Promise<boolean> {
    return this.#run((sqlite) => sqlite.prepare(RELEASE_SQL).run({ name, holder, epoch }).changes === 1);
  }

  async check(name: string, holder: string, epoch: number): Promise<boolean> {
    return this.#run((sqlite) => sqlite.prepare(CHECK_SQL).get({ name, holder, epoch, nowMs: this.#nowMs() }) !== undefined);
  }

  async countHeld(prefix: string): Promise<number> {
    return this.#run((sqlite) => sqlite.prepare<Record<string, unknown>, { held: number }>(COUNT_HELD_SQL).get({ prefix, nowMs: this.#nowMs() })?.held ?? 0);
  }

  async close(): Promise<void> {
    this.#sqlite?.close();
    this.#sqlite = null;
  }

  /** `fn` on the connection (opened at the first call), its errors the port's. */
  #run<T>(fn: (sqlite: Database.Database) => T): T {
    try {
      const sqlite = this.#open();
      followDeferral(sqlite);
      return fn(sqlite);
    } catch (error) {
      throw portErrorOf(error);
    }
  }

  #open(): Database.Database {
    if (this.#sqlite !== null) return this.#sqlite;
    const sqlite = new Database(this.#file, { fileMustExist: true });
    try {
      sqlite.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
      sqlite.pragma('synchronous = NORMAL');
    } catch (error) {
      sqlite.close();
      throw error;
    }
    this.#sqlite = sqlite;
    return sqlite;
  }
}
