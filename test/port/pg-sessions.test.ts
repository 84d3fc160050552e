import { describe } from 'vitest';
import type { PgPool } from '../../db/pg/pool.ts';
import { PgSessions } from '../../db/pg/sessions.ts';
import type { StoredSession } from '../../db/port/sessions.ts';
import { postgresOrSkip } from '../support/postgres.ts';
import { plantedFails, runContract } from './contract.ts';
import { pgContractBackends } from './pg-backends.ts';
import { type SessionsEnv, sessionsCases } from './sessions.contract.ts';

// The sessions contract on PostgreSQL: each case on a fresh copy of one migrated database,
// through Interlock's own role; another connection is another pool, as another server has.

const available = postgresOrSkip('the PostgreSQL sessions contract (test/port/pg-sessions.test.ts)');

/** A planted bad store: being seen writes the session it created back, as an upsert, so a session ended meanwhile comes back. */
class UpsertingPgSessions extends PgSessions {
  readonly #copies = new Map<string, StoredSession>();

  override create(idHash: string, session: StoredSession): Promise<void> {
    this.#copies.set(idHash, session);
    return super.create(idHash, session);
  }

  override async seen(idHash: string, atMs: number): Promise<boolean> {
    const copy = this.#copies.get(idHash);
    if (copy === undefined) return super.seen(idHash, atMs);
    const result = await this.query(
      'INSERT INTO sessions (id_hash, name, csrf_token, created_at_ms, last_seen_at_ms) VALUES ($1, $2, $3, $4, $5) ' +
        'ON CONFLICT (id_hash) DO UPDATE SET last_seen_at_ms = GREATEST(sessions.last_seen_at_ms, excluded.last_seen_at_ms)',
      [idHash, copy.name, copy.csrfToken, copy.createdAtMs, atMs],
    );
    return result.rowCount === 1;
  }
}

/** A planted bad store: being seen sets the last-seen time to the one given, so a late sighting moves it back. */
class BackwardsPgSessions extends PgSessions {
  override async seen(idHash: string, atMs: number): Promise<boolean> {
    return (await this.query('UPDATE sessions SET last_seen_at_ms = $2 WHERE id_hash = $1', [idHash, atMs])).rowCount === 1;
  }
}

describe.skipIf(!available)('PostgreSQL', () => {
  const backend = pgContractBackends('sessions');
  /** The backend, its stores made by `connect`, each on a pool of its own. */
  const pgOn = (name: string, connect: (pool: PgPool) => PgSessions) => backend<SessionsEnv>(name, (openPool) => ({ store: connect(openPool()), other: () => connect(openPool()) }));
  runContract('sessions', sessionsCases, [pgOn('PostgreSQL', (pool) => new PgSessions({ pool }))]);
  plantedFails(
    'sessions',
    sessionsCases,
    ['a session ended is gone; ending it again, or seeing it, changes nothing and never brings it back'],
    pgOn('a PostgreSQL store whose sighting brings an ended session back', (pool) => new UpsertingPgSessions({ pool })),
  );
  plantedFails(
    'sessions',
    sessionsCases,
    ['being seen moves the last-seen time forward, never back'],
    pgOn('a PostgreSQL store whose sighting moves the last-seen time back', (pool) => new BackwardsPgSessions({ pool })),
  );
});
