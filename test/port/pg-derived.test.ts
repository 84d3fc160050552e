import { afterEach, beforeAll, describe } from 'vitest';
import { PgDerivedTables } from '../../db/pg/derived.ts';
import { openPgPool } from '../../db/pg/pool.ts';
import { copyPgDatabase, dropPgDatabase, freshPgDatabase, type PgDatabase, postgresOrSkip } from '../support/postgres.ts';
import { type ContractBackend, plantedFails, runContract } from './contract.ts';
import { type DerivedEnv, derivedCases } from './derived.contract.ts';
import { PgCheckingOutside, PgNotCheckingTheCursor, PgNotSubtracting, PgSnapshotReadingLive } from './planted-pg-derived.ts';

// The derived tables' contract on PostgreSQL: each case on a fresh copy of one migrated database,
// through Interlock's own role; another handle is another pool, as another process has.

const available = postgresOrSkip('the PostgreSQL derived tables contract (test/port/pg-derived.test.ts)');

type Pool = ReturnType<typeof openPgPool>;

let template: PgDatabase;
const made: PgDatabase[] = [];
const pools: Pool[] = [];

function poolOn(database: PgDatabase): Pool {
  const pool = openPgPool({ url: database.appUrl, max: 4 });
  pools.push(pool);
  return pool;
}

/** The backend, its stores made by `connect` on a fresh database, each handle on a pool of its own. */
const pgOn = (name: string, connect: (pool: Pool) => PgDerivedTables): ContractBackend<DerivedEnv> => ({
  name,
  make: async () => {
    const database = await copyPgDatabase(template, 'derived_case');
    made.push(database);
    return { tables: connect(poolOn(database)), other: () => connect(poolOn(database)) };
  },
  cleanUp: async () => {
    await Promise.all(pools.splice(0).map((pool) => pool.end()));
    for (const database of made.splice(0)) await dropPgDatabase(database);
  },
});

describe.skipIf(!available)('PostgreSQL', () => {
  beforeAll(async () => {
    template = await freshPgDatabase('derived_template');
  });
  afterEach(async () => {
    await Promise.all(pools.splice(0).map((pool) => pool.end()));
  });

  runContract('derived tables', derivedCases, [pgOn('PostgreSQL', (pool) => new PgDerivedTables({ pool }))]);

  plantedFails(
    'derived tables',
    derivedCases,
    [
      'a batch from a seq where the cursor does not stand is refused, and nothing of it is written',
      'a reset removes every row, digest and mark and stands the cursor at 0 under its version; the next batch starts from 0',
      'two handles advancing from the same cursor at once: exactly one applies, and the tables hold its batch alone',
      'many advances from two handles, interleaved, each from the cursor it read: no change lost or doubled',
    ],
    pgOn('a PostgreSQL store that does not check the cursor', (pool) => new PgNotCheckingTheCursor({ pool })),
  );

  plantedFails(
    'derived tables',
    derivedCases,
    [
      'the same rows written in other orders and batches, replaced and removed, have the same digest, the one recomputed from the rows',
      'a view with every row removed has no digest; the others keep theirs',
    ],
    pgOn('a PostgreSQL store that never subtracts the old row', (pool) => new PgNotSubtracting({ pool })),
  );

  plantedFails(
    'derived tables',
    derivedCases,
    [
      'two handles advancing from the same cursor at once: exactly one applies, and the tables hold its batch alone',
      'many advances from two handles, interleaved, each from the cursor it read: no change lost or doubled',
    ],
    pgOn('a PostgreSQL store that reads the cursor outside its write', (pool) => new PgCheckingOutside({ pool })),
  );

  plantedFails(
    'derived tables',
    derivedCases,
    ['a snapshot holds every row of every view once, as the tables stood when it was taken, while they advance past it'],
    pgOn('a PostgreSQL store whose snapshot reads each page as the tables stand then', (pool) => new PgSnapshotReadingLive({ pool })),
  );
});
