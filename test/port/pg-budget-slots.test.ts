import { afterEach, beforeAll, describe } from 'vitest';
import { PgBudgetSlots } from '../../db/pg/budget-slots.ts';
import { openPgPool } from '../../db/pg/pool.ts';
import { copyPgDatabase, dropPgDatabase, freshPgDatabase, type PgDatabase, postgresOrSkip } from '../support/postgres.ts';
import { budgetSlotsCases } from './budget-slots.contract.ts';
import { type ContractBackend, plantedFails, runContract } from './contract.ts';
import { type PgBudgetSlotsEnv, pgBudgetSlotsCases } from './pg-budget-slots.contract.ts';
import { SplitRoundPgBudgetSlots, UnlockedPgBudgetSlots } from './planted-pg-budget-slots.ts';

// The Stripe budget's slots contract on PostgreSQL, and the cases only PostgreSQL has: each case
// on a fresh copy of one migrated database, through Interlock's own role; another connection is
// another pool, as another server has.

const available = postgresOrSkip('the PostgreSQL budget slots contract (test/port/pg-budget-slots.test.ts)');

type Pool = ReturnType<typeof openPgPool>;

let template: PgDatabase;
const made: PgDatabase[] = [];
const pools: Pool[] = [];

function poolOn(database: PgDatabase, lockTimeoutMs?: number): Pool {
  const pool = openPgPool({ url: database.appUrl, max: 4, ...(lockTimeoutMs === undefined ? {} : { lockTimeoutMs }) });
  pools.push(pool);
  return pool;
}

/** The backend, its stores made by `connect` on a fresh database, each on a pool of its own. */
const pgOn = (name: string, connect: (pool: Pool) => PgBudgetSlots): ContractBackend<PgBudgetSlotsEnv> => ({
  name,
  make: async () => {
    const database = await copyPgDatabase(template, 'budget_slots_case');
    made.push(database);
    return {
      store: connect(poolOn(database)),
      other: () => connect(poolOn(database)),
      pool: poolOn(database),
      otherWith: ({ lockTimeoutMs }) => connect(poolOn(database, lockTimeoutMs)),
    };
  },
  cleanUp: async () => {
    await Promise.all(pools.splice(0).map((pool) => pool.end()));
    for (const database of made.splice(0)) await dropPgDatabase(database);
  },
});

const interleaved = 'rounds of two holders on two connections, interleaved, never hold more slots than the family has';
const fourPools = 'many rounds from four pools at once, families asked in either order, never deadlock nor leave a slot believed held by two holders';

describe.skipIf(!available)('PostgreSQL', () => {
  beforeAll(async () => {
    template = await freshPgDatabase('budget_slots_template');
  });
  afterEach(async () => {
    await Promise.all(pools.splice(0).map((pool) => pool.end()));
  });
  const good = pgOn('PostgreSQL', (pool) => new PgBudgetSlots({ pool }));
  runContract('budget slots', budgetSlotsCases, [good]);
  runContract('PostgreSQL budget slots', pgBudgetSlotsCases, [good]);
  const planted = pgOn('a PostgreSQL store that reads and takes in separate transactions', (pool) => new SplitRoundPgBudgetSlots({ pool }));
  plantedFails('budget slots', budgetSlotsCases, [interleaved], planted);
  plantedFails('PostgreSQL budget slots', pgBudgetSlotsCases, [fourPools], planted);
  const unlocked = pgOn('a PostgreSQL store that takes no family lock', (pool) => new UnlockedPgBudgetSlots({ pool }));
  plantedFails('PostgreSQL budget slots', pgBudgetSlotsCases, [fourPools], unlocked);
});
