import { SqliteLeases } from '../../db/leases.ts';
import { MemoryLeases } from '../../db/memory/leases.ts';
import type { Leases } from '../../db/port/leases.ts';
import { cleanUpDatabases, openTempDatabase } from '../support/db-journals.ts';
import { type ContractBackend, plantedFails, runContract } from './contract.ts';
import { type LeasesEnv, leasesCases } from './leases.contract.ts';
import { GREEDY_ACQUIRE_SQL, GREEDY_TAKE_OVER_SQL, STICKY_EPOCH_ACQUIRE_SQL, TAKE_OVER_CASES } from './planted-leases.ts';

// The leases contract in memory and on SQLite: on SQLite each connection is a connection of its
// own to one migrated file, as two processes have.

const memory: ContractBackend<LeasesEnv> = {
  name: 'memory',
  make: () => {
    const store = new MemoryLeases();
    return { store, other: () => store };
  },
};

const stores: Leases[] = [];

/** The backend, its stores made by `connect` on one fresh file, each a connection of its own. */
const sqliteOn = (name: string, connect: (file: string) => Leases): ContractBackend<LeasesEnv> => ({
  name,
  make: () => {
    const { file } = openTempDatabase();
    const open = () => {
      const store = connect(file);
      stores.push(store);
      return store;
    };
    return { store: open(), other: open };
  },
  cleanUp: async () => {
    for (const store of stores.splice(0)) await store.close();
    cleanUpDatabases();
  },
});

/** A SQLite store whose take-or-renew statement is `sql`: a planted bad one. */
class PlantedSqliteLeases extends SqliteLeases {
  constructor(
    file: string,
    private readonly sql: string,
  ) {
    super(file);
  }

  protected override acquireSql(): string {
    return this.sql;
  }
}

/** A planted bad SQLite store: it takes a lease over from whoever holds it, a live holder too. */
class GreedyTakeOverSqliteLeases extends SqliteLeases {
  protected override takeOverSql(): string {
    return GREEDY_TAKE_OVER_SQL;
  }
}

runContract('leases', leasesCases, [memory, sqliteOn('SQLite', (file) => new SqliteLeases(file))]);

plantedFails(
  'leases',
  leasesCases,
  [
    'a lease given back is taken again at a higher epoch, even by its last holder; a stale or foreign release does nothing',
    'an expired lease moves to another holder within its TTL, at a higher epoch, and the old holder then fails its check',
    'two holders racing to take, renew and give back a lease many times at once never hold the same epoch',
  ],
  sqliteOn('a SQLite store whose epoch stays put when the lease changes holder', (file) => new PlantedSqliteLeases(file, STICKY_EPOCH_ACQUIRE_SQL)),
);

plantedFails(
  'leases',
  leasesCases,
  [
    'a free lease is taken at epoch 1 and renewed by its holder at the same epoch; another holder is refused while it stands',
    'an expired lease moves to another holder within its TTL, at a higher epoch, and the old holder then fails its check',
  ],
  sqliteOn('a SQLite store that lets a second holder take an unexpired lease', (file) => new PlantedSqliteLeases(file, GREEDY_ACQUIRE_SQL)),
);

plantedFails('leases', leasesCases, TAKE_OVER_CASES, sqliteOn('a SQLite store that takes over a live holder\'s lease', (file) => new GreedyTakeOverSqliteLeases(file)));
