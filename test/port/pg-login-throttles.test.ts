import { describe, expect, it } from 'vitest';
import { PgLoginThrottles } from '../../db/pg/login-throttles.ts';
import { openPgPool, type PgClient, type PgPool } from '../../db/pg/pool.ts';
import { LOGIN_COUNT_KINDS, type LoginCountKind, type LoginKeys } from '../../db/port/login-throttles.ts';
import { LoginThrottle } from '../../server/throttle/login-throttle.ts';
import { limits } from '../../shared/limits.ts';
import { dropPgDatabase, freshPgDatabase, postgresOrSkip } from '../support/postgres.ts';
import { plantedFails, runContract } from './contract.ts';
import { type LoginThrottlesEnv, loginThrottlesCases } from './login-throttles.contract.ts';
import { pgContractBackends } from './pg-backends.ts';

// The login-count contract on PostgreSQL: each case on a fresh copy of one migrated database,
// through Interlock's own role; another connection is another pool, as another server has. Then
// what only a table shows: rows past their window are pruned.

const available = postgresOrSkip('the PostgreSQL login throttles contract (test/port/pg-login-throttles.test.ts)');

/** The rows of `kind` kept now. */
async function rowsOf(pool: PgPool, kind: LoginCountKind): Promise<number> {
  return (await pool.query<{ n: number }>('SELECT count(*)::int4 AS n FROM login_throttles WHERE kind = $1', [kind])).rows[0]!.n;
}

/**
 * A planted bad store: it reads the attempt's rows with a plain SELECT (no lock, nothing made),
 * decides, then writes: steps at once on one name all read the same count, and failures are lost.
 */
class ReadThenWritePgLoginThrottles extends PgLoginThrottles {
  protected override async lockRows(client: PgClient, keys: LoginKeys) {
    const kinds = [...LOGIN_COUNT_KINDS];
    const rows = await client.query<{ kind: LoginCountKind; key: string; failures: number; atMs: number; made: boolean }>(
      'SELECT kind, key, failures, at_ms AS "atMs", false AS made FROM login_throttles WHERE (kind, key) IN (SELECT * FROM unnest($1::text[], $2::text[])) ORDER BY kind, key',
      [kinds, kinds.map((kind) => keys[kind])],
    );
    return rows.rows;
  }
}

describe.skipIf(!available)('PostgreSQL', () => {
  const backend = pgContractBackends('login_throttles');
  /** The backend, its stores made by `connect`, each on a pool of its own. */
  const pgOn = (name: string, connect: (pool: PgPool, entriesMax?: number) => PgLoginThrottles) =>
    backend<LoginThrottlesEnv>(name, (openPool) => ({
      store: connect(openPool()),
      other: () => connect(openPool()),
      bounded: (entriesMax) => {
        const pool = openPool();
        return { store: connect(pool, entriesMax), kept: (kind) => rowsOf(pool, kind) };
      },
    }));
  runContract('login throttles', loginThrottlesCases, [pgOn('PostgreSQL', (pool, entriesMax) => new PgLoginThrottles({ pool, ...(entriesMax === undefined ? {} : { entriesMax }) }))]);
  plantedFails(
    'login throttles',
    loginThrottlesCases,
    ['failures sent at once to two servers are all counted: the ceiling lets exactly its number through'],
    pgOn('a PostgreSQL store that reads without locking, then writes', (pool, entriesMax) => new ReadThenWritePgLoginThrottles({ pool, ...(entriesMax === undefined ? {} : { entriesMax }) })),
  );
  plantedFails(
    'login throttles',
    loginThrottlesCases,
    ['a store keeps at most its bound of counts of each kind, forgetting the least recently written'],
    pgOn('a PostgreSQL store that ignores its bound', (pool) => new PgLoginThrottles({ pool })),
  );

  it('rows past their window are pruned by the steps after them; a refused attempt leaves no row', async () => {
    const database = await freshPgDatabase('login_throttles_prune');
    const pool = openPgPool({ url: database.appUrl, max: 2 });
    try {
      let nowMs = 1_700_000_000_000;
      const throttle = new LoginThrottle({ failuresPerHour: 10, addressFailuresPerHour: 1_000, wallMs: () => nowMs, store: new PgLoginThrottles({ pool }) });
      for (let i = 0; i < 10; i++) expect((await throttle.check('ana', `198.51.100.${i}`, false)).kind).toBe('try');
      expect(await rowsOf(pool, 'pair')).toBe(10);
      // Refused at the name's ceiling: the new address's rows made to lock them are not kept.
      expect(await throttle.check('ana', '198.51.100.77', false)).toMatchObject({ kind: 'wait', why: 'name' });
      expect([await rowsOf(pool, 'pair'), await rowsOf(pool, 'name'), await rowsOf(pool, 'address')]).toEqual([10, 1, 10]);
      // A day on, every count is forgotten: the next step prunes them and keeps only its own.
      nowMs += limits.loginFailuresForgetMs;
      expect(await throttle.check('bea', '203.0.113.7', false)).toEqual({ kind: 'try' });
      expect([await rowsOf(pool, 'pair'), await rowsOf(pool, 'name'), await rowsOf(pool, 'address')]).toEqual([1, 1, 1]);
    } finally {
      await pool.end();
      await dropPgDatabase(database);
    }
  });
});
