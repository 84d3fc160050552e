/**
 * The rules of the Stripe budget's slots, written once over any store (server/stripe/budget-slots.ts
 * says why they keep processes sharing an account within its limits): what a round reads and
 * writes, the fair split of a family's slots, and what a holder takes, keeps and gives back.
 */
import type { FamilyAsk, SlotRow } from './port/budget-slots.ts';

export type { FamilyAsk, SlotRow } from './port/budget-slots.ts';

/** What a live holder wants of a family, in slots. */
export interface WantRow {
  holder: string;
  slots: number;
}

/** A live holder's want with the family's capacity it is configured for (0: not known). */
export interface CapacityWant extends WantRow {
  capacity: number;
}

/** What one round does to a family's slots for a holder. */
export interface FamilyPlan {
  take: number[];
  keep: number[];
  release: number[];
  /** The holder's fair share of the family now. */
  target: number;
}

/**
 * The live process configured for the smallest capacity below `ask`'s, if any: processes that
 * disagree about an account's limits cannot share its slots (a slot is a different share of it to
 * each), so the larger yields to the smaller, the side that keeps every process within Stripe's limit.
 */
export function smallerCapacity(holder: string, ask: FamilyAsk, live: readonly CapacityWant[]): { holder: string; capacity: number } | undefined {
  const smaller = live.filter((w) => w.holder !== holder && w.capacity > 0 && w.capacity < ask.capacity).sort((a, b) => a.capacity - b.capacity)[0];
  return smaller === undefined ? undefined : { holder: smaller.holder, capacity: smaller.capacity };
}

/**
 * Split `slots` max-min fairly among the holders that want some: one at a time to each holder
 * still short, in holder order, round after round. What nobody wants stays free, for a process
 * that comes to take it at once.
 */
export function splitSlots(slots: number, wants: readonly WantRow[]): Map<string, number> {
  const order = [...wants].sort((a, b) => (a.holder < b.holder ? -1 : a.holder > b.holder ? 1 : 0));
  const given = new Map(order.map((w) => [w.holder, 0]));
  let left = slots;
  for (let short = true; left > 0 && short; ) {
    short = false;
    for (const want of order) {
      const has = given.get(want.holder) ?? 0;
      if (left === 0 || has >= want.slots) continue;
      given.set(want.holder, has + 1);
      left -= 1;
      short = true;
    }
  }
  return given;
}

/**
 * What a holder does with a family's slots: hold its fair share, and never fewer than its places
 * need. Short of it, it takes free slots (given back, or expired: an expired slot's last holder
 * started nothing on it in its last second); beyond it, it gives back the slots it does not need.
 */
export function planFamily(holder: string, nowMs: number, ask: FamilyAsk, rows: readonly SlotRow[], wants: readonly WantRow[]): FamilyPlan {
  const live = (row: SlotRow) => row.holder !== '' && row.expiresMs > nowMs;
  const mine = rows.filter((r) => live(r) && r.holder === holder).map((r) => r.slot);
  const free = rows.filter((r) => !live(r)).map((r) => r.slot);
  const target = ask.want === 0 ? 0 : (splitSlots(ask.slots, wants).get(holder) ?? 0);
  const hold = Math.max(ask.need, target);
  if (mine.length >= hold) return { take: [], keep: mine.slice(0, hold), release: mine.slice(hold), target };
  return { take: free.slice(0, hold - mine.length), keep: mine, release: [], target };
}
