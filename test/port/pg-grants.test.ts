import { afterAll, beforeAll, describe } from 'vitest';
import { PgGrants } from '../../db/pg/grants.ts';
import { openPgPool } from '../../db/pg/pool.ts';
import { type FakeClock, fakeClock } from '../support/db-journals.ts';
import { copyPgDatabase, dropPgDatabase, freshPgDatabase, type PgDatabase, postgresOrSkip } from '../support/postgres.ts';
import { type ContractBackend, plantedFails, runContract } from './contract.ts';
import { type GrantsEnv, grantsCases, T0 } from './grants.contract.ts';

// The grants contract on PostgreSQL: each case on a fresh copy of one migrated database, through
// Interlock's own role; another connection is another pool, as another server has, on one clock.

const available = postgresOrSkip('the PostgreSQL grants contract (test/port/pg-grants.test.ts)');

type Pool = ReturnType<typeof openPgPool>;

let template: PgDatabase | undefined;
const made: PgDatabase[] = [];
const pools: Pool[] = [];

function poolOn(database: PgDatabase): Pool {
  const pool = openPgPool({ url: database.appUrl, max: 4 });
  pools.push(pool);
  return pool;
}

/** The backend, its stores made by `connect` on a fresh database, each on a pool of its own. */
const pgOn = (name: string, connect: (pool: Pool, clock: FakeClock) => PgGrants): ContractBackend<GrantsEnv> => ({
  name,
  make: async () => {
    const database = await copyPgDatabase(template!, 'grants_case');
    made.push(database);
    const clock = fakeClock(T0);
    return { clock, grants: connect(poolOn(database), clock), other: () => connect(poolOn(database), clock) };
  },
  cleanUp: async () => {
    await Promise.all(pools.splice(0).map((pool) => pool.end()));
    for (const database of made.splice(0)) await dropPgDatabase(database);
  },
});

/** A planted bad store: a revocation overwrites any earlier one, so a lease is revoked again and again, its time moving. */
class RevokingAgainPgGrants extends PgGrants {
  override async revoke(leaseId: string): Promise<boolean> {
    return (await this.query('UPDATE grants SET revoked_at_ms = $2 WHERE lease_id = $1', [leaseId, this.now()])).rowCount === 1;
  }
}

describe.skipIf(!available)('PostgreSQL', () => {
  beforeAll(async () => {
    template = await freshPgDatabase('grants_template');
  });
  afterAll(async () => {
    if (template !== undefined) await dropPgDatabase(template);
  });
  runContract('grants', grantsCases, [pgOn('PostgreSQL', (pool, clock) => new PgGrants({ pool, nowMs: clock.wallClockMs }))]);
  plantedFails(
    'grants',
    grantsCases,
    ['a revoked lease is not live; the first revocation time stands; granting again clears it', 'grants and revocations racing sees on two connections: every see after the revocation says not live'],
    pgOn('a PostgreSQL store whose revocation overwrites the first', (pool, clock) => new RevokingAgainPgGrants({ pool, nowMs: clock.wallClockMs })),
  );
});
