import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import { type Checkpoints, JournalIdUnreadableError, type StoredCheckpoint } from '../port/checkpoints.ts';
import { inTransaction, pgQuery, portErrorOfPg } from './pool.ts';

// The PostgreSQL side of the checkpoints: the signed notes, apart from the entries, the journal's
// id, and the seal reads a checkpoint is held against (db/port/checkpoints.ts).

const JOURNAL_ID = 'journal_id';

// Adders of every process and server take turns on this lock (held to the transaction's end, so
// it is safe behind transaction pooling): the newest is read and the new one written under it.
const ADD_LOCK_SQL = "SELECT pg_advisory_xact_lock(hashtext('interlock.checkpoints'))";

/** SQLSTATEs of a table or column that is not there: the journal's id cannot be read at all. */
const MISSING_CODES: ReadonlySet<string> = new Set(['42P01', '42703']);

const SELECT_CHECKPOINT = 'SELECT id, epoch, size, head, note, signed_at_ms AS "signedAtMs" FROM journal_checkpoints';

export class PgCheckpoints implements Checkpoints {
  readonly #pool: pg.Pool;

  constructor(options: { pool: pg.Pool }) {
    this.#pool = options.pool;
  }

  async #query<R extends pg.QueryResultRow>(text: string, values: unknown[] = []): Promise<R[]> {
    return (await pgQuery<R>(this.#pool, text, values)).rows;
  }

  async latest(): Promise<StoredCheckpoint | null> {
    return (await this.#query<StoredCheckpoint>(`${SELECT_CHECKPOINT} ORDER BY id DESC LIMIT 1`))[0] ?? null;
  }

  async all(): Promise<StoredCheckpoint[]> {
    return this.#query<StoredCheckpoint>(`${SELECT_CHECKPOINT} ORDER BY id`);
  }

  async add(checkpoint: Omit<StoredCheckpoint, 'id'>): Promise<boolean> {
    return inTransaction(this.#pool, 'BEGIN ISOLATION LEVEL READ COMMITTED', async (client) => {
      await client.query(ADD_LOCK_SQL);
      // Read after the lock, in a statement of its own: it sees every checkpoint kept before.
      const newest = (await client.query<StoredCheckpoint>(`${SELECT_CHECKPOINT} ORDER BY id DESC LIMIT 1`)).rows[0];
      if (newest !== undefined && newest.epoch === checkpoint.epoch && newest.size >= checkpoint.size) return false;
      await client.query('INSERT INTO journal_checkpoints (id, epoch, size, head, note, signed_at_ms) VALUES ($1, $2, $3, $4, $5, $6)', [
        (newest?.id ?? 0) + 1,
        checkpoint.epoch,
        checkpoint.size,
        checkpoint.head,
        checkpoint.note,
        checkpoint.signedAtMs,
      ]);
      return true;
    });
  }

  async journalId(): Promise<string | null> {
    try {
      return (await this.#pool.query<{ value: string }>('SELECT value FROM journal_meta WHERE name = $1', [JOURNAL_ID])).rows[0]?.value ?? null;
    } catch (error) {
      if (error instanceof Error && 'code' in error && typeof error.code === 'string' && MISSING_CODES.has(error.code)) throw new JournalIdUnreadableError(error.message);
      throw portErrorOfPg(error);
    }
  }

  async ensureJournalId(): Promise<string> {
    // A second process inserting at once waits for the first's commit, then does nothing.
    await this.#query('INSERT INTO journal_meta (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING', [JOURNAL_ID, randomBytes(8).toString('hex')]);
    const id = (await this.#query<{ value: string }>('SELECT value FROM journal_meta WHERE name = $1', [JOURNAL_ID]))[0]?.value;
    if (id === undefined) throw new Error('the journal id could not be stored');
    return id;
  }

  async globalHashAtSize(size: number, dense = false): Promise<string | null> {
    if (size <= 0) return null;
    const rows = dense
      ? await this.#query<{ global_hash: string }>('SELECT global_hash FROM journal_seals WHERE seq = $1 AND EXISTS (SELECT 1 FROM entries WHERE seq = $1)', [size])
      : await this.#query<{ global_hash: string }>('SELECT global_hash FROM journal_seals WHERE seq = (SELECT seq FROM entries ORDER BY seq OFFSET $1 LIMIT 1)', [size - 1]);
    return rows[0]?.global_hash ?? null;
  }

  async seqAtSize(size: number): Promise<number | null> {
    if (size <= 0) return 0;
    return (await this.#query<{ seq: number }>('SELECT seq FROM entries ORDER BY seq OFFSET $1 LIMIT 1', [size - 1]))[0]?.seq ?? null;
  }
}
