import { describe } from 'vitest';
import { PgBudgetSlots } from '../../db/pg/budget-slots.ts';
import type { PgPool } from '../../db/pg/pool.ts';
import { postgresOrSkip } from '../support/postgres.ts';
import { budgetSlotsCases } from './budget-slots.contract.ts';
import { plantedFails, runContract } from './contract.ts';
import { pgContractBackends } from './pg-backends.ts';
import { type PgBudgetSlotsEnv, pgBudgetSlotsCases } from './pg-budget-slots.contract.ts';
import { SplitRoundPgBudgetSlots, UnlockedPgBudgetSlots } from './planted-pg-budget-slots.ts';

// The Stripe budget's slots contract on PostgreSQL, and the cases only PostgreSQL has: each case
// on a fresh copy of one migrated database, through Interlock's own role; another connection is
// another pool, as another server has.

const available = postgresOrSkip('the PostgreSQL budget slots contract (test/port/pg-budget-slots.test.ts)');

const interleaved = 'rounds of two holders on two connections, interleaved, never hold more slots than the family has';
const fourPools = 'many rounds from four pools at once, families asked in either order, never deadlock nor leave a slot believed held by two holders';

describe.skipIf(!available)('PostgreSQL', () => {
  const backend = pgContractBackends('budget_slots');
  /** The backend, its stores made by `connect`, each on a pool of its own. */
  const pgOn = (name: string, connect: (pool: PgPool) => PgBudgetSlots) =>
    backend<PgBudgetSlotsEnv>(name, (openPool) => ({
      store: connect(openPool()),
      other: () => connect(openPool()),
      pool: openPool(),
      otherWith: ({ lockTimeoutMs }) => connect(openPool({ lockTimeoutMs })),
    }));
  const good = pgOn('PostgreSQL', (pool) => new PgBudgetSlots({ pool }));
  runContract('budget slots', budgetSlotsCases, [good]);
  runContract('PostgreSQL budget slots', pgBudgetSlotsCases, [good]);
  const planted = pgOn('a PostgreSQL store that reads and takes in separate transactions', (pool) => new SplitRoundPgBudgetSlots({ pool }));
  plantedFails('budget slots', budgetSlotsCases, [interleaved], planted);
  plantedFails('PostgreSQL budget slots', pgBudgetSlotsCases, [fourPools], planted);
  const unlocked = pgOn('a PostgreSQL store that takes no family lock', (pool) => new UnlockedPgBudgetSlots({ pool }));
  plantedFails('PostgreSQL budget slots', pgBudgetSlotsCases, [fourPools], unlocked);
});
