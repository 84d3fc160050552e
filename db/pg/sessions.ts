import type pg from 'pg';
import type { Sessions, StoredSession } from '../port/sessions.ts';
import { pgQuery } from './pool.ts';

// People's sessions on PostgreSQL, as db/session-store.ts keeps them on SQLite: each call one
// statement on the pool, committed on its own, so what one server does is seen by the next read
// of every other.

const SELECT_SESSION = 'SELECT name, csrf_token AS "csrfToken", created_at_ms AS "createdAtMs", last_seen_at_ms AS "lastSeenAtMs" FROM sessions WHERE id_hash = $1';

/** Sessions in a PostgreSQL database, shared by every server on it. */
export class PgSessions implements Sessions {
  readonly #pool: pg.Pool;

  constructor(options: { pool: pg.Pool }) {
    this.#pool = options.pool;
  }

  /** Run one statement on the pool; its errors come out as the port's. */
  protected query<R extends pg.QueryResultRow>(text: string, values: unknown[]): Promise<pg.QueryResult<R>> {
    return pgQuery<R>(this.#pool, text, values);
  }

  async create(idHash: string, session: StoredSession): Promise<void> {
    await this.query('INSERT INTO sessions (id_hash, name, csrf_token, created_at_ms, last_seen_at_ms) VALUES ($1, $2, $3, $4, $5)', [
      idHash,
      session.name,
      session.csrfToken,
      session.createdAtMs,
      session.lastSeenAtMs,
    ]);
  }

  async get(idHash: string): Promise<StoredSession | null> {
    return (await this.query<StoredSession>(SELECT_SESSION, [idHash])).rows[0] ?? null;
  }

  async seen(idHash: string, atMs: number): Promise<boolean> {
    // An UPDATE, never an upsert: a session ended meanwhile stays ended. Under READ COMMITTED an
    // UPDATE racing an end waits for it, then finds no row.
    const result = await this.query('UPDATE sessions SET last_seen_at_ms = GREATEST(last_seen_at_ms, $2::int8) WHERE id_hash = $1', [idHash, atMs]);
    return result.rowCount === 1;
  }

  async end(idHash: string): Promise<boolean> {
    return (await this.query('DELETE FROM sessions WHERE id_hash = $1', [idHash])).rowCount === 1;
  }

  async endFor(names: ReadonlySet<string>): Promise<string[]> {
    if (names.size === 0) return [];
    // One statement for any number of names: the array is one parameter.
    const ended = await this.query<{ id_hash: string }>(
      'WITH ended AS (DELETE FROM sessions WHERE name = ANY($1::text[]) RETURNING id_hash) SELECT id_hash FROM ended ORDER BY id_hash',
      [[...names]],
    );
    return ended.rows.map((row) => row.id_hash);
  }
}
