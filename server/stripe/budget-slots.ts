import type { BudgetSlotStore, FamilyAsk, SlotHolding } from '../../db/port/budget-slots.ts';
import { type BudgetCapacity, type BudgetClock, type BudgetShare, GLOBAL_FAMILY, REAL_BUDGET_CLOCK, type StripeBudget } from './budget.ts';

/**
 * Processes sharing one Stripe account share its budget through slot rows in the store.
 *
 * Each family's capacity (the account's limit, and each endpoint's when it is below the account's)
 * is cut into slots; one process at a time holds a slot, for a while it renews as long as it has
 * calls out or waiting, and a slot lets its holder hold `size` places of its budget at once (a
 * place runs from a call's grant until a second after its answer, so the calls Stripe counts in any
 * second are within the places held). Processes split a family's slots max-min fairly by what each
 * wants (a want row each, with an expiry): a process whose calls wait while it uses every place it
 * holds wants every slot, any other what its places and waiting calls use and one more; none gets
 * more than it wants while another wants more than it has, and what nobody wants stays free, for
 * the next process to take at once. A process alone so holds as much of the capacity as it uses,
 * all of it once its calls wait. Two rules keep the sum of every process's places within the
 * capacity:
 * - a process grants places only on slots whose hold has more than `USABLE_MARGIN_MS` to run, and
 *   a granted call starts only while its places fit in those slots, so a slot that lapses (its
 *   holder stalled or died) had no call started on it in the second before it lapsed;
 * - a process gives a slot back only when its places fit in the slots it keeps, so the next holder
 *   never holds a place beside one the last holder still counts on the slot.
 * A slot expired or given back may so be taken at once. The rows need no durability: after a crash
 * the slots lapse, which is all a lost write could do.
 */

/** How long a slot is held from its last renewal. */
export const SLOT_HOLD_MS = 3_000;
/** How often a process with calls out or waiting renews its slots and asks for its share again. */
export const RENEW_MS = 500;
/**
 * A slot is used for new places only while its hold has more than this to run: the second a call
 * is counted in, and 250 ms for its way to Stripe and for clocks that disagree.
 */
export const USABLE_MARGIN_MS = 1_250;
/** A process holding less than its share asks again this often, as others give theirs back. */
const SHORT_RENEW_MS = 100;
/** Rounds a waiting call asks for are at least this far apart, however many calls wait. */
const WAKE_GAP_MS = 20;
/** A process asks for a quarter of the slots beyond what it uses, so its next calls start at once. */
const HEADROOM_SHARE_DIVISOR = 4;
/** A family's capacity is cut into at most this many slots, so a raised limit keeps the rows few. */
export const SLOTS_MAX = 100;

/** What an operator is told when two processes budget one account differently. */
function disagreement(account: string, family: string, capacity: number, smaller: { holder: string; capacity: number }): string {
  const limit = family === GLOBAL_FAMILY ? 'the account' : `${family}`;
  return (
    `another Interlock process on this database (${smaller.holder}) budgets ${limit} of Stripe account "${account}" at ${smaller.capacity} calls a second, ` +
    `this one at ${capacity}: this process sends nothing there while the other has calls to make; give every process the same stripe.rate_limits`
  );
}

/** How a family's capacity is cut: `slots` slots of `size` places each. */
export function slotsOf(capacity: number): { slots: number; size: number } {
  const size = Math.max(1, Math.ceil(capacity / SLOTS_MAX));
  return { slots: Math.floor(capacity / size), size };
}

export interface BudgetSlotsOptions {
  store: BudgetSlotStore;
  /** The Stripe account the processes share a budget for (the sandbox's address, or test mode). */
  account: string;
  capacity: BudgetCapacity;
  /** The wall clock every process sharing the store reads, and timers. */
  clock?: BudgetClock;
  /** This process's name in the rows (default: its pid and a random suffix, unique across hosts). */
  holder?: string;
  /** A round that failed (the store busy or broken): the slots held lapse unless the next one works. */
  onError?: (error: unknown) => void;
  /**
   * Told at each round while another process sharing the account is configured for a smaller
   * capacity of a family: this one then yields to it, sending nothing on that family, until they
   * agree (or the other has nothing to send).
   */
  onDisagreement?: (message: string) => void;
}

/** This process's share of the account's budget, kept in slot rows: the `BudgetShare` of a budget shared with other processes. */
export class BudgetSlots implements BudgetShare {
  readonly holder: string;
  readonly #options: BudgetSlotsOptions;
  readonly #clock: BudgetClock;
  /** True when endpoints need slots of their own: their limit is below the account's, which alone would not hold them. */
  readonly #endpointsSlotted: boolean;
  readonly #holdings = new Map<string, SlotHolding>();
  /** The slots asked for in the last round, by family. */
  readonly #asked = new Map<string, number>();
  /** While a round is out: the most slots of each family it may leave, so nothing is granted beyond them meanwhile. */
  #frozen: Map<string, number> | null = null;
  #budget: StripeBudget | null = null;
  #round: Promise<void> | null = null;
  #again = false;
  #stopped = false;
  #lastRoundMs = Number.NEGATIVE_INFINITY;
  #answers = 0;
  #cancelTimer: (() => void) | null = null;
  #timerAtMs = Number.POSITIVE_INFINITY;

  constructor(options: BudgetSlotsOptions) {
    this.#options = options;
    this.#clock = options.clock ?? REAL_BUDGET_CLOCK;
    this.holder = options.holder ?? `${process.pid}-${Math.random().toString(36).slice(2, 10)}`;
    this.#endpointsSlotted = options.capacity.endpointPerWindow < options.capacity.globalPerWindow;
  }

  start(budget: StripeBudget): void {
    this.#budget = budget;
  }

  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#cancel();
    if (this.#budget === null) {
      await this.#options.store.close();
      return;
    }
    await this.#round;
    // Give back every slot the places still out do not need; those lapse once the calls are done.
    try {
      await this.#runRound(true);
    } finally {
      this.#holdings.clear();
      await this.#options.store.close();
    }
  }

  grantable(family: string): number {
    if (family !== GLOBAL_FAMILY && !this.#endpointsSlotted) return this.#options.capacity.endpointPerWindow;
    const holding = this.#usable(family);
    if (holding === null) return 0;
    const slots = Math.min(holding.held, holding.target, this.#frozen?.get(family) ?? Number.POSITIVE_INFINITY);
    return slots * this.#layout(family).size;
  }

  covered(family: string): number {
    if (family !== GLOBAL_FAMILY && !this.#endpointsSlotted) return this.#options.capacity.endpointPerWindow;
    const holding = this.#usable(family);
    return holding === null ? 0 : holding.held * this.#layout(family).size;
  }

  expected(family: string): number {
    const { slots, size } = this.#layout(family);
    return Math.floor(slots / Math.max(1, this.#holdings.get(family)?.wanting ?? 1)) * size;
  }

  known(families: readonly string[]): boolean {
    return families.every((family) => (family !== GLOBAL_FAMILY && !this.#endpointsSlotted) || this.#usable(family) !== null);
  }

  answers(): number {
    return this.#answers;
  }

  wanted(): void {
    if (this.#budget === null || this.#stopped) return;
    // Only calls beyond what was asked for need a round now; the renewals ask again anyway.
    const grew = this.#asks(false).some((ask) => ask.want > (this.#asked.get(ask.family) ?? 0));
    if (grew) this.#schedule(Math.max(0, this.#lastRoundMs + WAKE_GAP_MS - this.#clock.nowMs()));
  }

  /** The slots held now, by family (for tests and the figures). */
  held(): Map<string, number> {
    return new Map([...this.#holdings].map(([family, h]) => [family, h.held]));
  }

  #usable(family: string): SlotHolding | null {
    const holding = this.#holdings.get(family);
    if (holding === undefined || this.#clock.nowMs() >= holding.expiresMs - USABLE_MARGIN_MS) return null;
    return holding;
  }

  #layout(family: string): { slots: number; size: number } {
    return slotsOf(this.#capacityOf(family));
  }

  /** A family's calls a second as this process is configured. */
  #capacityOf(family: string): number {
    const { globalPerWindow, endpointPerWindow } = this.#options.capacity;
    return family === GLOBAL_FAMILY ? globalPerWindow : endpointPerWindow;
  }

  /** What to ask of each family: the account's, and each endpoint's with places, calls or slots (when endpoints have slots of their own). */
  #asks(leaving: boolean): FamilyAsk[] {
    const demand = this.#budget?.demand() ?? new Map();
    const families = new Set<string>([GLOBAL_FAMILY]);
    if (this.#endpointsSlotted) for (const family of [...demand.keys(), ...this.#holdings.keys()]) families.add(family);
    return [...families].map((family) => {
      const { slots, size } = this.#layout(family);
      const { held, waiting } = demand.get(family) ?? { held: 0, waiting: 0 };
      const need = Math.ceil(held / size);
      // Calls waiting while every place it may grant is taken: how many more it would use is not
      // known here (a queue in front of the budget hands it one request at a time), so it asks for
      // every slot and the split makes that fair. Otherwise it asks for what its places and
      // waiting calls use and a quarter of the slots more: calls that come one after another (a
      // reconciliation's lists) never look saturated, and with one slot more they were held to
      // about a call a second; the other three quarters stay free for the next process to take at once.
      const grantable = this.grantable(family);
      const saturated = waiting > 0 && grantable > 0 && held >= grantable;
      const headroom = Math.max(1, Math.ceil(slots / HEADROOM_SHARE_DIVISOR));
      const used = Math.min(slots, Math.ceil((held + waiting) / size) + headroom);
      const want = leaving || held + waiting === 0 ? 0 : saturated ? slots : used;
      return { family, slots, need, want, capacity: this.#capacityOf(family) };
    });
  }

  #schedule(delayMs: number): void {
    if (this.#stopped) return;
    if (this.#round !== null) {
      this.#again = true;
      return;
    }
    const atMs = this.#clock.nowMs() + delayMs;
    if (this.#cancelTimer !== null && this.#timerAtMs <= atMs) return;
    this.#cancel();
    this.#timerAtMs = atMs;
    this.#cancelTimer = this.#clock.after(delayMs, () => {
      this.#cancelTimer = null;
      this.#timerAtMs = Number.POSITIVE_INFINITY;
      this.#round = this.#runRound(false).finally(() => {
        this.#round = null;
        this.#afterRound();
      });
    });
  }

  #cancel(): void {
    this.#cancelTimer?.();
    this.#cancelTimer = null;
    this.#timerAtMs = Number.POSITIVE_INFINITY;
  }

  /** Renew while anything is out or waiting (sooner while short of the share); once idle, nothing is held and nothing runs. */
  #afterRound(): void {
    if (this.#stopped) return;
    if (this.#again) {
      this.#again = false;
      this.#schedule(WAKE_GAP_MS);
      return;
    }
    const holdings = [...this.#holdings.values()];
    const active = [...this.#asked.values()].some((want) => want > 0) || holdings.some((h) => h.held > 0);
    if (!active) return;
    const short = holdings.some((h) => h.held < h.target);
    this.#schedule(short ? SHORT_RENEW_MS : RENEW_MS);
  }

  async #runRound(leaving: boolean): Promise<void> {
    const asks = this.#asks(leaving);
    const nowMs = this.#clock.nowMs();
    this.#lastRoundMs = nowMs;
    this.#frozen = new Map(asks.map((ask) => [ask.family, ask.need]));
    try {
      const holdings = await this.#options.store.round({ account: this.#options.account, holder: this.holder, nowMs, holdMs: SLOT_HOLD_MS, asks });
      this.#answers += 1;
      for (const ask of asks) this.#asked.set(ask.family, ask.want);
      for (const holding of holdings) {
        if (holding.held === 0 && holding.target === 0) this.#holdings.delete(holding.family);
        else this.#holdings.set(holding.family, holding);
        if (holding.smaller !== undefined) this.#options.onDisagreement?.(disagreement(this.#options.account, holding.family, this.#capacityOf(holding.family), holding.smaller));
      }
    } catch (error) {
      // The slots held stay as they were and lapse on their own unless a later round renews them.
      this.#options.onError?.(error);
      this.#asked.clear();
    } finally {
      this.#frozen = null;
    }
    if (!leaving) this.#budget?.pump();
  }
}
