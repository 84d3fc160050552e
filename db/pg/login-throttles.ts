import type pg from 'pg';
import { limits } from '../../shared/limits.ts';
import {
  LOGIN_COUNT_KINDS,
  type LoginCount,
  type LoginCountKind,
  type LoginCounts,
  type LoginKeys,
  type LoginStepResult,
  type LoginThrottles,
} from '../port/login-throttles.ts';
import { inTransaction, pgQuery } from './pool.ts';

// The login throttles' counts on PostgreSQL (db/port/login-throttles.ts), one table every server on
// the database reads and writes, so each server's failures count on all of them.
//
// A step is one READ COMMITTED transaction. Its first statement is an INSERT ... ON CONFLICT DO
// UPDATE of the attempt's three rows: a row missing is made (at nothing), a row there is locked,
// and either is returned as it now stands. Under READ COMMITTED that upsert waits for any other
// step holding the row and then reads its newest committed version, so the counts `decide` sees
// are the latest, and no other step reads them until this one commits what it wrote: every
// failure is counted, from whichever server, none lost to a read-then-write race. The rows are
// locked in one order of kinds (pair, name, address), and a step has one key of each kind, so two
// steps never each hold a row the other waits for.
//
// The table is bounded. A count says nothing any more from its `forget_at_ms` (a day after a name
// and address's last failure; once a name's or address's count has drained), and each step deletes
// up to PRUNE_BATCH such rows. And each kind keeps at most `entriesMax` rows
// (limits.throttleEntriesMax, as in memory): a step that made a row of a kind deletes up to
// PRUNE_BATCH of that kind's least recently written rows beyond the newest `entriesMax`. A step
// adds at most one row of each kind and removes up to PRUNE_BATCH, so a flood of distinct names or
// addresses holds each kind at `entriesMax` rows, beyond it only by the rows of steps still in
// flight: about 3 × 100,000 short rows in all. As in memory, a count pushed out by the bound makes
// the throttle more lenient to its key, never stricter to another.

/** Rows a step deletes at most, of those forgotten and of those past the bound, each. */
const PRUNE_BATCH = 100;

const LOCK_SQL = `INSERT INTO login_throttles (kind, key, failures, at_ms, forget_at_ms)
SELECT kind, key, 0, $3::int8, $3::int8 FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS asked (kind, key, n) ORDER BY n
ON CONFLICT (kind, key) DO UPDATE SET kind = excluded.kind
RETURNING kind, key, failures, at_ms AS "atMs", (xmax = 0) AS made`;

/** A count as decided: its row is there and locked by the step, so this sets it; as an upsert it needs no row. */
const WRITE_SQL = `INSERT INTO login_throttles (kind, key, failures, at_ms, forget_at_ms) VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (kind, key) DO UPDATE SET failures = excluded.failures, at_ms = excluded.at_ms, forget_at_ms = excluded.forget_at_ms`;
const FORGET_SQL = 'DELETE FROM login_throttles WHERE kind = $1 AND key = $2';

/** Forgotten rows, oldest first; a row another step holds is skipped, never waited for. */
const PRUNE_SQL = `DELETE FROM login_throttles WHERE (kind, key) IN (
  SELECT kind, key FROM login_throttles WHERE forget_at_ms <= $1 ORDER BY forget_at_ms, kind, key LIMIT ${PRUNE_BATCH} FOR UPDATE SKIP LOCKED)`;

/** A kind's rows older than its newest $2 (by last write, then key), least recently written first. */
const TRIM_SQL = `DELETE FROM login_throttles WHERE (kind, key) IN (
  SELECT kind, key FROM login_throttles
  WHERE kind = $1 AND (at_ms, key) < (SELECT at_ms, key FROM login_throttles WHERE kind = $1 ORDER BY at_ms DESC, key DESC OFFSET $2::int8 - 1 LIMIT 1)
  ORDER BY at_ms, key LIMIT ${PRUNE_BATCH} FOR UPDATE SKIP LOCKED)`;

/** A row as the lock statement returns it. */
interface LockedRow extends LoginCount {
  kind: LoginCountKind;
  key: string;
  made: boolean;
}

/** Login counts in a PostgreSQL database, shared by every server on it. */
export class PgLoginThrottles implements LoginThrottles {
  readonly #pool: pg.Pool;
  readonly #entriesMax: number;

  constructor(options: { pool: pg.Pool; entriesMax?: number }) {
    this.#pool = options.pool;
    this.#entriesMax = options.entriesMax ?? limits.throttleEntriesMax;
    if (!(Number.isSafeInteger(this.#entriesMax) && this.#entriesMax > 0)) throw new RangeError('a store holds at least one count of each kind');
  }

  async step<T>(keys: LoginKeys, nowMs: number, decide: (counts: LoginCounts) => LoginStepResult<T>): Promise<T> {
    const { answer, made } = await inTransaction(this.#pool, 'BEGIN ISOLATION LEVEL READ COMMITTED', (client) => this.decided(client, keys, nowMs, decide));
    await this.#cleanUp(nowMs, made);
    return answer;
  }

  /** Lock the attempt's rows, decide, write what was decided: the transaction of a step. The kinds it made rows of and kept. */
  protected async decided<T>(client: pg.ClientBase, keys: LoginKeys, nowMs: number, decide: (counts: LoginCounts) => LoginStepResult<T>): Promise<{ answer: T; made: LoginCountKind[] }> {
    const locked = await this.lockRows(client, keys, nowMs);
    const counts: LoginCounts = { pair: undefined, name: undefined, address: undefined };
    for (const row of locked) if (!row.made) counts[row.kind] = { failures: row.failures, atMs: row.atMs };
    const { writes, answer } = decide(counts);
    const made: LoginCountKind[] = [];
    for (const kind of LOGIN_COUNT_KINDS) {
      const write = writes[kind];
      const wasMade = locked.some((row) => row.kind === kind && row.made);
      if (write !== undefined && write !== null) {
        await client.query(WRITE_SQL, [kind, keys[kind], write.failures, write.atMs, write.forgetAtMs]);
        if (wasMade) made.push(kind);
      } else if (write === null || wasMade) {
        // Forgotten, or made only to be locked and left at nothing: no row is kept.
        await client.query(FORGET_SQL, [kind, keys[kind]]);
      }
    }
    return { answer, made };
  }

  /** Make or lock the attempt's rows, in the order of the kinds: each as it stands now, `made` when it was not there. */
  protected async lockRows(client: pg.ClientBase, keys: LoginKeys, nowMs: number): Promise<LockedRow[]> {
    return (await client.query<LockedRow>(LOCK_SQL, [LOGIN_COUNT_KINDS, LOGIN_COUNT_KINDS.map((kind) => keys[kind]), nowMs])).rows;
  }

  /**
   * After a step: delete rows forgotten, and rows past the bound of each kind the step made a row
   * of. A failure here changes no answer; the next step tries again.
   */
  async #cleanUp(nowMs: number, made: readonly LoginCountKind[]): Promise<void> {
    try {
      await pgQuery(this.#pool, PRUNE_SQL, [nowMs]);
      for (const kind of made) await pgQuery(this.#pool, TRIM_SQL, [kind, this.#entriesMax]);
    } catch {
      // Nothing of the step depends on it.
    }
  }
}
