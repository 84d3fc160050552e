import { describe } from 'vitest';
import { PgGrants } from '../../db/pg/grants.ts';
import type { PgPool } from '../../db/pg/pool.ts';
import { type FakeClock, fakeClock } from '../support/db-journals.ts';
import { postgresOrSkip } from '../support/postgres.ts';
import { plantedFails, runContract } from './contract.ts';
import { pgContractBackends } from './pg-backends.ts';
import { type GrantsEnv, grantsCases, T0 } from './grants.contract.ts';

// The grants contract on PostgreSQL: each case on a fresh copy of one migrated database, through
// Interlock's own role; another connection is another pool, as another server has, on one clock.

const available = postgresOrSkip('the PostgreSQL grants contract (test/port/pg-grants.test.ts)');

/** A planted bad store: a revocation overwrites any earlier one, so a lease is revoked again and again, its time moving. */
class RevokingAgainPgGrants extends PgGrants {
  override async revoke(leaseId: string): Promise<boolean> {
    return (await this.query('UPDATE grants SET revoked_at_ms = $2 WHERE lease_id = $1', [leaseId, this.now()])).rowCount === 1;
  }
}

describe.skipIf(!available)('PostgreSQL', () => {
  const backend = pgContractBackends('grants');
  /** The backend, its stores made by `connect` on one clock, each on a pool of its own. */
  const pgOn = (name: string, connect: (pool: PgPool, clock: FakeClock) => PgGrants) =>
    backend<GrantsEnv>(name, (openPool) => {
      const clock = fakeClock(T0);
      return { clock, grants: connect(openPool(), clock), other: () => connect(openPool(), clock) };
    });
  runContract('grants', grantsCases, [pgOn('PostgreSQL', (pool, clock) => new PgGrants({ pool, nowMs: clock.wallClockMs }))]);
  plantedFails(
    'grants',
    grantsCases,
    ['a revoked lease is not live; the first revocation time stands; granting again clears it', 'grants and revocations racing sees on two connections: every see after the revocation says not live'],
    pgOn('a PostgreSQL store whose revocation overwrites the first', (pool, clock) => new RevokingAgainPgGrants({ pool, nowMs: clock.wallClockMs })),
  );
});
