import { type CapacityWant, planFamily, smallerCapacity } from '../budget-slot-rules.ts';
import type { BudgetSlotStore, FamilyAsk, SlotHolding, SlotRound, SlotRow } from '../port/budget-slots.ts';

/** A want row this long past its expiry is a process that stopped: its row is removed. */
const WANT_FORGOTTEN_MS = 60_000;

interface WantRecord {
  slots: number;
  expiresMs: number;
  capacity: number;
}

/** The rows every connection of one memory store shares: slots and wants by account and family. */
export class SlotRows {
  readonly #slots = new Map<string, SlotRow[]>();
  readonly #wants = new Map<string, Map<string, WantRecord>>();

  /** The family's first `count` slots, made free where missing. */
  slots(account: string, family: string, count: number): SlotRow[] {
    const key = JSON.stringify([account, family]);
    const rows = this.#slots.get(key) ?? [];
    for (let slot = rows.length; slot < count; slot++) rows.push({ slot, holder: '', expiresMs: 0 });
    this.#slots.set(key, rows);
    return rows.slice(0, count);
  }

  wants(account: string, family: string): Map<string, WantRecord> {
    const key = JSON.stringify([account, family]);
    const wants = this.#wants.get(key) ?? new Map<string, WantRecord>();
    this.#wants.set(key, wants);
    return wants;
  }

  liveWants(account: string, family: string, nowMs: number): CapacityWant[] {
    return [...this.wants(account, family)].filter(([, w]) => w.expiresMs > nowMs).map(([holder, w]) => ({ holder, slots: w.slots, capacity: w.capacity }));
  }

  forgetWants(account: string, beforeMs: number): void {
    for (const [key, wants] of this.#wants) {
      if ((JSON.parse(key) as string[])[0] !== account) continue;
      for (const [holder, want] of wants) if (want.expiresMs < beforeMs) wants.delete(holder);
    }
  }
}

/**
 * The Stripe budget's slots in memory, for tests and the simulator: the rules of
 * `budget-slot-rules.ts` over rows every connection (`connect`) shares. A round runs with no
 * await inside it, so it is one transaction as the SQLite store's is.
 */
export class MemoryBudgetSlots implements BudgetSlotStore {
  constructor(protected readonly rows: SlotRows = new SlotRows()) {}

  /** Another connection onto the same rows, as another process has. */
  connect(): MemoryBudgetSlots {
    return new MemoryBudgetSlots(this.rows);
  }

  async round(round: SlotRound): Promise<SlotHolding[]> {
    this.rows.forgetWants(round.account, round.nowMs - WANT_FORGOTTEN_MS);
    return round.asks.map((ask) => this.family(round, ask));
  }

  async close(): Promise<void> {}

  protected family(round: SlotRound, ask: FamilyAsk): SlotHolding {
    const { account, holder, nowMs } = round;
    const { family } = ask;
    const expiresMs = nowMs + round.holdMs;
    const rows = this.rows.slots(account, family, ask.slots);
    const smaller = smallerCapacity(holder, ask, this.rows.liveWants(account, family, nowMs));
    const asked = smaller === undefined ? ask : { ...ask, want: 0 };
    const wants = this.rows.wants(account, family);
    if (asked.want > 0) wants.set(holder, { slots: asked.want, expiresMs, capacity: ask.capacity });
    else wants.delete(holder);
    const live = this.rows.liveWants(account, family, nowMs);
    const plan = planFamily(holder, nowMs, asked, rows.map((row) => ({ ...row })), live);
    let held = 0;
    for (const slot of [...plan.keep, ...plan.take]) {
      const row = rows[slot];
      // Taken (or renewed) only when free, expired or this holder's own.
      if (row === undefined || !(row.holder === holder || row.expiresMs <= nowMs)) continue;
      row.holder = holder;
      row.expiresMs = expiresMs;
      held += 1;
    }
    for (const slot of plan.release) {
      const row = rows[slot];
      if (row === undefined || row.holder !== holder) continue;
      row.holder = '';
      row.expiresMs = 0;
    }
    return { family, held, target: plan.target, expiresMs, wanting: live.length, ...(smaller === undefined ? {} : { smaller }) };
  }
}
