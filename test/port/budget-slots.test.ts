import { SqliteBudgetSlots } from '../../db/budget-slot-store.ts';
import { planFamily } from '../../db/budget-slot-rules.ts';
import { MemoryBudgetSlots } from '../../db/memory/budget-slots.ts';
import type { BudgetSlotStore, SlotHolding, SlotRound } from '../../db/port/budget-slots.ts';
import { cleanUpDatabases, openTempDatabase } from '../support/db-journals.ts';
import { type BudgetSlotsEnv, budgetSlotsCases } from './budget-slots.contract.ts';
import { type ContractBackend, plantedFails, runContract } from './contract.ts';

const memory: ContractBackend<BudgetSlotsEnv> = {
  name: 'memory',
  make: () => {
    const store = new MemoryBudgetSlots();
    return { store, other: () => store.connect() };
  },
};

const opened: BudgetSlotStore[] = [];
/** Each connection is a database connection of its own on one file, as two processes have. */
const sqlite: ContractBackend<BudgetSlotsEnv> = {
  name: 'SQLite',
  make: () => {
    const { file } = openTempDatabase();
    const connect = () => {
      const store = new SqliteBudgetSlots(file);
      opened.push(store);
      return store;
    };
    return { store: connect(), other: connect };
  },
  cleanUp: async () => {
    for (const store of opened.splice(0)) await store.close();
    cleanUpDatabases();
  },
};

runContract('budget slots', budgetSlotsCases, [memory, sqlite]);

/**
 * A planted bad store: it plans on the rows it read, then takes the slots it planned without
 * checking, at the write, that they are still free, as a store over the network does when its
 * write says nothing of what it read.
 */
class UncheckedTakeSlots extends MemoryBudgetSlots {
  override connect(): UncheckedTakeSlots {
    return new UncheckedTakeSlots(this.rows);
  }

  override async round(round: SlotRound): Promise<SlotHolding[]> {
    const { account, holder, nowMs } = round;
    const expiresMs = nowMs + round.holdMs;
    const planned = round.asks.map((ask) => {
      const rows = this.rows.slots(account, ask.family, ask.slots);
      const wants = this.rows.wants(account, ask.family);
      if (ask.want > 0) wants.set(holder, { slots: ask.want, expiresMs, capacity: ask.capacity });
      else wants.delete(holder);
      const live = this.rows.liveWants(account, ask.family, nowMs);
      return { ask, rows, live, plan: planFamily(holder, nowMs, ask, rows.map((row) => ({ ...row })), live) };
    });
    await new Promise((resolve) => setImmediate(resolve));
    return planned.map(({ ask, rows, live, plan }) => {
      for (const slot of [...plan.keep, ...plan.take]) Object.assign(rows[slot] ?? {}, { holder, expiresMs });
      for (const slot of plan.release) Object.assign(rows[slot] ?? {}, { holder: '', expiresMs: 0 });
      return { family: ask.family, held: plan.keep.length + plan.take.length, target: plan.target, expiresMs, wanting: live.length };
    });
  }
}

plantedFails('budget slots', budgetSlotsCases, ['rounds of two holders on two connections, interleaved, never hold more slots than the family has'], {
  name: 'a store that takes a slot without checking it is free',
  make: () => {
    const store = new UncheckedTakeSlots();
    return { store, other: () => store.connect() };
  },
});
