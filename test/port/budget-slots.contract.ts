import { expect } from 'vitest';
import type { BudgetSlotStore, FamilyAsk, SlotHolding } from '../../db/port/budget-slots.ts';
import type { ContractCase } from './contract.ts';

// What every store of the Stripe budget's slots does (db/port/budget-slots.ts): a slot another
// live holder holds is never taken, a freed or expired one is, holders split a family fairly, a
// holder configured for less makes the others yield, and rounds of holders on two connections,
// however they interleave, never hold more slots than the family has.

export interface BudgetSlotsEnv {
  store: BudgetSlotStore;
  /** Another connection onto the same store (another process's view of it). */
  other(): BudgetSlotStore;
}

const ACCOUNT = 'sandbox http://127.0.0.1:1';
const HOLD_MS = 3_000;
const T0 = 1_700_000_000_000;

const ask = (slots: number, want: number, need = 0, capacity = slots): FamilyAsk => ({ family: '*', slots, want, need, capacity });

async function round(store: BudgetSlotStore, holder: string, nowMs: number, family: FamilyAsk): Promise<SlotHolding> {
  const [holding] = await store.round({ account: ACCOUNT, holder, nowMs, holdMs: HOLD_MS, asks: [family] });
  if (holding === undefined) throw new Error('a round answered no holding for its family');
  return holding;
}

/** A small seeded generator, so a failing interleaving can be run again. */
function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1_664_525) + 1_013_904_223) >>> 0;
    return state / 2 ** 32;
  };
}

export const budgetSlotsCases: Record<string, ContractCase<BudgetSlotsEnv>> = {
  'a holder alone takes every slot it wants, and once it wants none keeps only what its places need': async ({ store }) => {
    expect(await round(store, 'a', T0, ask(4, 4))).toEqual({ family: '*', held: 4, target: 4, expiresMs: T0 + HOLD_MS, wanting: 1 });
    expect(await round(store, 'a', T0 + 500, ask(4, 0, 1))).toMatchObject({ held: 1, target: 0, wanting: 0 });
    expect(await round(store, 'b', T0 + 500, ask(4, 4))).toMatchObject({ held: 3, target: 4 });
  },

  'a slot another live holder holds is never taken; one given back or expired is': async ({ store, other }) => {
    const b = other();
    expect((await round(store, 'a', T0, ask(4, 4))).held).toBe(4);
    expect(await round(b, 'b', T0 + 10, ask(4, 4))).toMatchObject({ held: 0, target: 2, wanting: 2 });
    expect(await round(store, 'a', T0 + 20, ask(4, 4))).toMatchObject({ held: 2, target: 2 });
    expect(await round(b, 'b', T0 + 30, ask(4, 4))).toMatchObject({ held: 2, target: 2 });
    // a stops renewing: once its slots and want expire, b takes them all.
    expect(await round(b, 'b', T0 + 20 + HOLD_MS, ask(4, 4))).toMatchObject({ held: 4, target: 4, wanting: 1 });
  },

  'holders split a family by what each wants, and what nobody wants stays free': async ({ store, other }) => {
    const b = other();
    await round(store, 'a', T0, ask(20, 20));
    await round(b, 'b', T0 + 1, ask(20, 3));
    expect((await round(store, 'a', T0 + 2, ask(20, 20))).target).toBe(17);
    expect((await round(b, 'b', T0 + 3, ask(20, 3))).held).toBe(3);
    expect((await round(store, 'a', T0 + 4, ask(20, 20))).held).toBe(17);
    expect((await round(store, 'a', T0 + 5, ask(20, 10))).held).toBe(10);
    expect((await round(b, 'b', T0 + 6, ask(20, 3))).held).toBe(3);
  },

  'a live holder configured for a smaller capacity makes the larger want nothing, and is named': async ({ store, other }) => {
    const small = other();
    await round(small, 'small', T0, ask(20, 20, 0, 20));
    const larger = await round(store, 'large', T0 + 1, ask(80, 80, 0, 80));
    expect(larger).toMatchObject({ held: 0, target: 0, smaller: { holder: 'small', capacity: 20 } });
    expect((await round(small, 'small', T0 + 2, ask(20, 20, 0, 20))).smaller).toBeUndefined();
  },

  'rounds of two holders on two connections, interleaved, never hold more slots than the family has': async ({ store, other }) => {
    const random = seeded(7);
    const connections = [store, other()];
    const SLOTS = 8;
    const holdings = new Map<string, SlotHolding>();
    let nowMs = T0;
    for (let step = 0; step < 60; step++) {
      nowMs += Math.floor(random() * 700);
      // Each holder asks at once, most often for every slot; it keeps what its places need.
      const asks = connections.map((connection, i) => {
        const holder = `p${i}`;
        const held = holdings.get(holder);
        const need = held !== undefined && held.expiresMs > nowMs ? Math.floor(random() * (held.held + 1)) : 0;
        const want = random() < 0.7 ? SLOTS : Math.floor(random() * SLOTS);
        return round(connection, holder, nowMs, ask(SLOTS, want, need)).then((holding) => holdings.set(holder, holding));
      });
      await Promise.all(asks);
      const live = [...holdings.values()].filter((h) => h.expiresMs > nowMs);
      expect(live.reduce((sum, h) => sum + h.held, 0), `step ${step}`).toBeLessThanOrEqual(SLOTS);
    }
  },
};
