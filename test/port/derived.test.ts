import { SqliteDerivedTables } from '../../db/derived-store.ts';
import { MemoryDerivedTables } from '../../db/memory/derived.ts';
import type { OpenDatabase } from '../../db/open.ts';
import type { DerivedTables } from '../../db/port/derived.ts';
import { cleanUpDatabases, openTempDatabase } from '../support/db-journals.ts';
import { type ContractBackend, plantedFails, runContract } from './contract.ts';
import { type DerivedEnv, derivedCases } from './derived.contract.ts';
import { SqliteCheckingOutside, SqliteNotCheckingTheCursor, SqliteNotSubtracting, SqliteSnapshotReadingLive } from './planted-derived.ts';

const memory: ContractBackend<DerivedEnv> = {
  name: 'memory',
  make: () => {
    const tables = new MemoryDerivedTables();
    return { tables, other: () => tables };
  },
};

/** Each handle is a database connection of its own on one file, as two processes have. */
const sqliteOn = (name: string, connect: (database: OpenDatabase) => DerivedTables): ContractBackend<DerivedEnv> => ({
  name,
  make: () => {
    const { file } = openTempDatabase();
    return { tables: connect(openTempDatabase(file)), other: () => connect(openTempDatabase(file)) };
  },
  cleanUp: cleanUpDatabases,
});

runContract('derived tables', derivedCases, [memory, sqliteOn('SQLite', (database) => new SqliteDerivedTables(database.db))]);

plantedFails(
  'derived tables',
  derivedCases,
  [
    'a batch from a seq where the cursor does not stand is refused, and nothing of it is written',
    'a reset removes every row, digest and mark and stands the cursor at 0 under its version; the next batch starts from 0',
    'two handles advancing from the same cursor at once: exactly one applies, and the tables hold its batch alone',
    'many advances from two handles, interleaved, each from the cursor it read: no change lost or doubled',
  ],
  sqliteOn('a store that does not check the cursor', (database) => new SqliteNotCheckingTheCursor(database.db)),
);

plantedFails(
  'derived tables',
  derivedCases,
  [
    'the same rows written in other orders and batches, replaced and removed, have the same digest, the one recomputed from the rows',
    'a view with every row removed has no digest; the others keep theirs',
  ],
  sqliteOn('a store that never subtracts the old row', (database) => new SqliteNotSubtracting(database.db)),
);

plantedFails(
  'derived tables',
  derivedCases,
  [
    'two handles advancing from the same cursor at once: exactly one applies, and the tables hold its batch alone',
    'many advances from two handles, interleaved, each from the cursor it read: no change lost or doubled',
  ],
  sqliteOn('a store that reads the cursor outside its write', (database) => new SqliteCheckingOutside(database.db)),
);

plantedFails(
  'derived tables',
  derivedCases,
  ['a snapshot holds every row of every view once, as the tables stood when it was taken, while they advance past it'],
  sqliteOn('a store whose snapshot reads each page as the tables stand then', (database) => new SqliteSnapshotReadingLive(database.db)),
);
