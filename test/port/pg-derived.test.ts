import { describe } from 'vitest';
import { PgDerivedTables } from '../../db/pg/derived.ts';
import type { PgPool } from '../../db/pg/pool.ts';
import { postgresOrSkip } from '../support/postgres.ts';
import { plantedFails, runContract } from './contract.ts';
import { pgContractBackends } from './pg-backends.ts';
import { type DerivedEnv, derivedCases } from './derived.contract.ts';
import { PgCheckingOutside, PgNotCheckingTheCursor, PgNotSubtracting, PgSnapshotReadingLive } from './planted-pg-derived.ts';

// The derived tables' contract on PostgreSQL: each case on a fresh copy of one migrated database,
// through Interlock's own role; another handle is another pool, as another process has.

const available = postgresOrSkip('the PostgreSQL derived tables contract (test/port/pg-derived.test.ts)');

describe.skipIf(!available)('PostgreSQL', () => {
  const backend = pgContractBackends('derived');
  /** The backend, its stores made by `connect`, each handle on a pool of its own. */
  const pgOn = (name: string, connect: (pool: PgPool) => PgDerivedTables) => backend<DerivedEnv>(name, (openPool) => ({ tables: connect(openPool()), other: () => connect(openPool()) }));

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
