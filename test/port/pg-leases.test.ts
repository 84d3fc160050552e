import { describe } from 'vitest';
import { PgLeases } from '../../db/pg/leases.ts';
import type { PgPool } from '../../db/pg/pool.ts';
import { postgresOrSkip } from '../support/postgres.ts';
import { plantedFails, runContract } from './contract.ts';
import { pgContractBackends } from './pg-backends.ts';
import { type LeasesEnv, leasesCases } from './leases.contract.ts';
import { PG_GREEDY_ACQUIRE_SQL, PG_GREEDY_TAKE_OVER_SQL, PG_STICKY_EPOCH_ACQUIRE_SQL, TAKE_OVER_CASES } from './planted-leases.ts';

// The leases contract on PostgreSQL: each case on a fresh copy of one migrated database, through
// Interlock's own role; another connection is another pool, as another server has.

const available = postgresOrSkip('the PostgreSQL leases contract (test/port/pg-leases.test.ts)');

/** A PostgreSQL store whose take-or-renew statement is `sql`: a planted bad one. */
class PlantedPgLeases extends PgLeases {
  constructor(
    pool: PgPool,
    private readonly sql: string,
  ) {
    super({ pool });
  }

  protected override acquireSql(): string {
    return this.sql;
  }
}

/** A planted bad store: it counts every lease row of a prefix with a holder, lapsed or not, so a dead server stays counted. */
class LapsedCountingPgLeases extends PgLeases {
  override async countHeld(prefix: string): Promise<number> {
    return (await this.query<{ held: number }>("SELECT count(*) AS held FROM work_leases WHERE substr(name, 1, length($1)) = $1 AND holder <> ''", [prefix])).rows[0]?.held ?? 0;
  }
}

/** A planted bad store: it takes a lease over from whoever holds it, a live holder too. */
class GreedyTakeOverPgLeases extends PgLeases {
  protected override takeOverSql(): string {
    return PG_GREEDY_TAKE_OVER_SQL;
  }
}

describe.skipIf(!available)('PostgreSQL', () => {
  const backend = pgContractBackends('leases');
  /** The backend, its stores made by `connect`, each on a pool of its own. */
  const pgOn = (name: string, connect: (pool: PgPool) => PgLeases) => backend<LeasesEnv>(name, (openPool) => ({ store: connect(openPool()), other: () => connect(openPool()) }));
  runContract('leases', leasesCases, [pgOn('PostgreSQL', (pool) => new PgLeases({ pool }))]);
  plantedFails(
    'leases',
    leasesCases,
    [
      'a lease given back is taken again at a higher epoch, even by its last holder; a stale or foreign release does nothing',
      'an expired lease moves to another holder within its TTL, at a higher epoch, and the old holder then fails its check',
      'two holders racing to take, renew and give back a lease many times at once never hold the same epoch',
    ],
    pgOn('a PostgreSQL store whose epoch stays put when the lease changes holder', (pool) => new PlantedPgLeases(pool, PG_STICKY_EPOCH_ACQUIRE_SQL)),
  );
  plantedFails(
    'leases',
    leasesCases,
    [
      'a free lease is taken at epoch 1 and renewed by its holder at the same epoch; another holder is refused while it stands',
      'an expired lease moves to another holder within its TTL, at a higher epoch, and the old holder then fails its check',
    ],
    pgOn('a PostgreSQL store that lets a second holder take an unexpired lease', (pool) => new PlantedPgLeases(pool, PG_GREEDY_ACQUIRE_SQL)),
  );
  plantedFails(
    'leases',
    leasesCases,
    ['the leases of a prefix held unexpired are counted, on every connection; one given back or lapsed is not'],
    pgOn('a PostgreSQL store that counts lapsed leases', (pool) => new LapsedCountingPgLeases({ pool })),
  );
  plantedFails('leases', leasesCases, TAKE_OVER_CASES, pgOn("a PostgreSQL store that takes over a live holder's lease", (pool) => new GreedyTakeOverPgLeases({ pool })));
});
