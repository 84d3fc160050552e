/**
 * One Stripe budget per Stripe account and process: every Stripe call draws a start from it.
 *
 * Stripe allows an account a number of operations a second (25 in test mode, 100 live) and each
 * endpoint its own (25 by default), counted in any one second. The budget lets no more than its
 * capacity start in any sliding one-second window, globally and per endpoint: a call counts from
 * the moment it is granted (a grant not used yet holds its place) until one second after it
 * started, so the window holds however late a grant is used. Waiting calls are served by class:
 * a class below its floor share of the window goes first, then sends before recovery before new
 * requests before background reads, first come first served within a class; a class with nothing
 * waiting lends its share. After any 429 the capacity is halved for a while, because the
 * Dashboard and other integrations share the account. Processes sharing one account hold a share
 * of the capacity each (`BudgetShare`, budget-slots.ts), and grant only within it.
 */

import { StripeCallTimes } from './call-times.ts';

/** Who is calling, most urgent first. */
export const BUDGET_CLASSES = ['send', 'recovery', 'request', 'background'] as const;
/** One class of Stripe calls. */
export type BudgetClass = (typeof BUDGET_CLASSES)[number];

/**
 * Each class's floor share of the window: what it gets whenever it has calls waiting, whatever the
 * others want. Sends (an approved or routine refund's fresh read and create) first; recovery next,
 * so a crash's open dispatches settle; new requests' facts; background readers last, but never
 * starved.
 */
export const BUDGET_FLOORS: Readonly<Record<BudgetClass, number>> = { send: 0.6, recovery: 0.2, request: 0.15, background: 0.05 };

/**
 * The most of the window a class may hold, borrowed shares included: background readers (what the
 * pages show of a payment, confirmation lookups, reconciliation) never fill a second by
 * themselves, so an agent's request or a person's send finds room at once.
 */
export const BUDGET_CEILINGS: Readonly<Record<BudgetClass, number>> = { send: 1, recovery: 1, request: 1, background: 0.5 };

/** Stripe's published limits, in operations a second. */
export const STRIPE_MODE_LIMITS = {
  test: { globalPerSecond: 25, endpointPerSecond: 25 },
  live: { globalPerSecond: 100, endpointPerSecond: 25 },
} as const;
/** A Stripe mode whose limits are published. */
export type StripeLimitMode = keyof typeof STRIPE_MODE_LIMITS;

/** The share of Stripe's limits Interlock uses unless the config says otherwise. */
export const BUDGET_SHARE_DEFAULT = 0.8;
/** The window the limits are counted in. */
export const BUDGET_WINDOW_MS = 1_000;
/** How long the capacity stays halved after a 429. */
export const BUDGET_PENALTY_MS = 10_000;
/** A grant not used or released within this long is taken as used then: a holder that never calls cannot hold a place for ever. */
export const BUDGET_GRANT_HOLD_MS = 30_000;

/** The family of the account's own limit; every other family is an endpoint's. */
export const GLOBAL_FAMILY = '*';

/** While calls wait, the budget looks for room again at least this often. */
const LOOK_AGAIN_MS = 250;
/**
 * How long past its time a `takeWithin` waits for a shared budget to learn its room (the share's
 * round answered), when it did not know it: a round waits on the database, which a loaded machine
 * or another process's commit can hold past 50 ms, and an idle process holds no slot until then.
 */
export const SHARE_ANSWER_WAIT_MS = 1_000;

/** The capacity a budget works with: starts allowed in any window, globally and per endpoint. */
export interface BudgetCapacity {
  globalPerWindow: number;
  endpointPerWindow: number;
}

/** The capacity for a mode at a share of Stripe's limits (at least one call a window each). */
export function capacityFor(mode: StripeLimitMode, share = BUDGET_SHARE_DEFAULT, overrides: Partial<BudgetCapacity> = {}): BudgetCapacity {
  const limits = STRIPE_MODE_LIMITS[mode];
  return {
    globalPerWindow: Math.max(1, Math.floor((overrides.globalPerWindow ?? limits.globalPerSecond) * share)),
    endpointPerWindow: Math.max(1, Math.floor((overrides.endpointPerWindow ?? limits.endpointPerSecond) * share)),
  };
}

/** One call's place in the window: granted (start null) or started. */
interface Place {
  endpoint: string;
  klass: BudgetClass;
  grantedMs: number;
  /** When the call started, then when its answer came; null while granted and not used. */
  startMs: number | null;
  /** True while the call is out: it holds its place whatever its start. */
  calling?: boolean;
}

interface Waiter {
  klass: BudgetClass;
  endpoints: readonly string[];
  seq: number;
  resolve: (grant: BudgetGrant) => void;
  /** A `takeWithin` past its time while its share's room was not known: it gives up at the next answer (`answers` beyond this). */
  giveUpAfter?: number;
  /** Leave the queue with nothing granted. */
  giveUp?: () => void;
}

/** Calls granted together: each is used by one call to its endpoint, and what is not used is given back. */
export class BudgetGrant {
  readonly #budget: StripeBudget;
  readonly #places: Place[];

  constructor(budget: StripeBudget, places: Place[]) {
    this.#budget = budget;
    this.#places = places;
  }

  /** The class the grant was taken for. */
  get klass(): BudgetClass {
    return this.#places[0]?.klass ?? 'background';
  }

  /**
   * Take the grant's place for a call to `endpoint` as it starts now; the place is then held until
   * one second after `finished` is called (when the answer came). Null when it holds none unused.
   */
  use(endpoint: string): { finished(): void } | null {
    const place = this.#places.find((p) => p.endpoint === endpoint && p.startMs === null && this.#budget.holds(p));
    if (!place || !this.#budget.covers(endpoint)) return null;
    const budget = this.#budget;
    place.startMs = budget.nowMs();
    place.calling = true;
    return {
      finished() {
        place.startMs = budget.nowMs();
        place.calling = false;
      },
    };
  }

  /** Whether a call to `endpoint` can still use this grant. */
  has(endpoint: string): boolean {
    return this.#places.some((p) => p.endpoint === endpoint && p.startMs === null && this.#budget.holds(p));
  }

  /** Give back every place not used: nobody called with them, so they count for nothing. */
  release(): void {
    this.#budget.giveBack(this.#places.filter((p) => p.startMs === null));
  }
}

/** What a budget is told of time; tests drive both. */
export interface BudgetClock {
  nowMs(): number;
  /** Call `run` after `ms`; the returned function cancels it. */
  after(ms: number, run: () => void): () => void;
}

/**
 * The wall clock and real timers, unref'd: the budget's own rounds never keep a process alive (a
 * server refused at start ends at once). A call waiting for its place keeps the process up by the
 * budget's hold while it waits (`#holdWhileWaiting`), since only these timers wake it.
 */
/** How often the hold's idle timer fires while a call waits: it does nothing, it only keeps the loop alive. */
const WAITING_HOLD_MS = 60_000;

export const REAL_BUDGET_CLOCK: BudgetClock = {
  nowMs: () => Date.now(),
  after: (ms, run) => {
    const timer = setTimeout(run, ms);
    timer.unref();
    return () => clearTimeout(timer);
  },
};

/** What the budget has counted since it was made. */
export interface BudgetCounts {
  granted: Record<BudgetClass, number>;
  /** 429 answers seen, by endpoint. */
  rateLimited: Record<string, number>;
  /** Calls that went out, by endpoint. */
  calls: Record<string, number>;
  /** Calls that went out, by class and endpoint (`send GET /v1/payment_intents/:id`). */
  callsByClass: Record<string, number>;
}

/** What a budget holds and wants for one family (the account's limit, or an endpoint's). */
export interface FamilyDemand {
  /** Places held now: granted, out, or in their second after the answer. */
  held: number;
  /** Calls waiting for a place. */
  waiting: number;
}

/**
 * The part of an account's capacity this process holds, for processes sharing one account
 * (budget-slots.ts); a budget without one has the whole capacity to itself.
 */
export interface BudgetShare {
  /** Start holding a share for `budget`, which it asks what it holds and wants. */
  start(budget: StripeBudget): void;
  /** Give back what can be given back, and hold nothing more. */
  stop(): Promise<void>;
  /** Places the budget may grant now for `family` (`GLOBAL_FAMILY` or an endpoint). */
  grantable(family: string): number;
  /** Places the share covers now for `family`: a granted call may start only while the places fit in them. */
  covered(family: string): number;
  /** Calls wait that the places grantable do not cover: look for more now. */
  wanted(): void;
  /** Places it may expect for `family` while its calls wait: an even split among the processes that want some. */
  expected(family: string): number;
  /**
   * Whether the room for these families is known now: the share holds slots of each it may use. A
   * process that holds none (idle, it gave every slot back) knows its room only once its next round
   * is answered.
   */
  known(families: readonly string[]): boolean;
  /** Rounds the store has answered so far: one more means the room was asked for again and told. */
  answers(): number;
}

export interface StripeBudgetOptions {
  capacity: BudgetCapacity;
  clock?: BudgetClock;
  /** The share of the account's capacity this process holds, when processes share one account. */
  share?: BudgetShare;
}

/** The process's Stripe budget. */
export class StripeBudget {
  readonly capacity: BudgetCapacity;
  readonly #clock: BudgetClock;
  readonly #share: BudgetShare | null;
  #places: Place[] = [];
  #waiters: Waiter[] = [];
  #seq = 0;
  #penaltyUntilMs = 0;
  #cancelTimer: (() => void) | null = null;
  #timerAtMs = Number.POSITIVE_INFINITY;
  /** A referenced handle held while any call waits, so the process lives until the call is granted. */
  #waitingHold: ReturnType<typeof setInterval> | null = null;
  /** Stopped: a call still waiting no longer keeps the process alive. */
  #stopped = false;
  /** How long each call took, told to the metrics by the paced transport. */
  readonly callTimes = new StripeCallTimes();
  readonly counts: BudgetCounts = {
    granted: { send: 0, recovery: 0, request: 0, background: 0 },
    rateLimited: {},
    calls: {},
    callsByClass: {},
  };

  constructor(options: StripeBudgetOptions) {
    this.capacity = options.capacity;
    this.#clock = options.clock ?? REAL_BUDGET_CLOCK;
    this.#share = options.share ?? null;
  }

  nowMs(): number {
    return this.#clock.nowMs();
  }

  /**
   * Starts allowed in the window now, halved after a 429: globally within the share held, and per
   * endpoint before any endpoint's own share (`#allowed` gives each endpoint's).
   */
  current(): BudgetCapacity {
    const penalty = this.#penalty();
    return {
      globalPerWindow: this.#allowed(GLOBAL_FAMILY),
      endpointPerWindow: Math.floor(this.capacity.endpointPerWindow * penalty),
    };
  }

  /** Start holding the share of the account (when shared): before the first call. */
  start(): void {
    this.#share?.start(this);
  }

  /** Stop holding the share: what no place needs is given back at once, the rest lapses. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#holdWhileWaiting();
    await this.#share?.stop();
  }

  /** What the budget holds and wants now, in all (`GLOBAL_FAMILY`) and per endpoint. */
  demand(): Map<string, FamilyDemand> {
    this.#prune();
    const families = new Map<string, FamilyDemand>([[GLOBAL_FAMILY, { held: this.#places.length, waiting: 0 }]]);
    const of = (family: string) => {
      const known = families.get(family);
      if (known) return known;
      const fresh = { held: 0, waiting: 0 };
      families.set(family, fresh);
      return fresh;
    };
    for (const place of this.#places) of(place.endpoint).held += 1;
    for (const waiter of this.#waiters) {
      of(GLOBAL_FAMILY).waiting += waiter.endpoints.length;
      for (const endpoint of waiter.endpoints) of(endpoint).waiting += 1;
    }
    return families;
  }

  /**
   * Whether a granted call to `endpoint` may start now: always when alone; when shared, only while
   * the places held fit in what the share covers (a share that could not be renewed covers less).
   */
  covers(endpoint: string): boolean {
    if (this.#share === null) return true;
    const inEndpoint = this.#places.filter((p) => p.endpoint === endpoint).length;
    return this.#places.length <= this.#share.covered(GLOBAL_FAMILY) && inEndpoint <= this.#share.covered(endpoint);
  }

  #penalty(): number {
    return this.nowMs() < this.#penaltyUntilMs ? 0.5 : 1;
  }

  /** Places allowed in the window now for a family: its capacity within the share held, halved after a 429. */
  #allowed(family: string): number {
    const capacity = family === GLOBAL_FAMILY ? this.capacity.globalPerWindow : this.capacity.endpointPerWindow;
    const held = this.#share === null ? capacity : Math.min(capacity, this.#share.grantable(family));
    return Math.floor(held * this.#penalty());
  }

  /** Wait for places for these calls (one per endpoint named), granted together. */
  take(klass: BudgetClass, endpoints: readonly string[]): Promise<BudgetGrant> {
    if (endpoints.length === 0) throw new Error('a grant names at least one call');
    return new Promise((resolve) => {
      this.#waiters.push({ klass, endpoints, seq: this.#seq++, resolve });
      this.pump();
    });
  }

  /**
   * `take`, giving up after `ms` (null): the waiter leaves the queue with nothing granted. The time
   * counts against a room that is known: a shared budget that holds no slot yet (idle) waits for its
   * share's answer first, at most `SHARE_ANSWER_WAIT_MS` more, and gives up then only if the answer
   * leaves no room.
   */
  takeWithin(klass: BudgetClass, endpoints: readonly string[], ms: number): Promise<BudgetGrant | null> {
    if (endpoints.length === 0) throw new Error('a grant names at least one call');
    return new Promise((resolve) => {
      const waiter: Waiter = { klass, endpoints, seq: this.#seq++, resolve };
      this.#waiters.push(waiter);
      let cancel = () => {};
      const giveUp = () => {
        cancel();
        const at = this.#waiters.indexOf(waiter);
        if (at < 0) return;
        this.#waiters.splice(at, 1);
        this.#holdWhileWaiting();
        resolve(null);
      };
      waiter.giveUp = giveUp;
      cancel = this.#clock.after(ms, () => {
        const share = this.#share;
        if (share === null || share.known([GLOBAL_FAMILY, ...endpoints])) return giveUp();
        waiter.giveUpAfter = share.answers();
        cancel = this.#clock.after(SHARE_ANSWER_WAIT_MS, giveUp);
      });
      waiter.resolve = (grant) => {
        cancel();
        resolve(grant);
      };
      this.pump();
    });
  }

  /** The places now, or null without waiting: nothing is queued when the window is full. */
  tryTake(klass: BudgetClass, endpoints: readonly string[]): BudgetGrant | null {
    this.#prune();
    if (this.#waiters.length > 0 || !this.#fits(endpoints)) return null;
    return this.#grant(klass, endpoints);
  }

  /** The factor the limits are held at now: 1, or less for a while after a 429 (for the metrics). */
  get penalty(): number {
    return this.#penalty();
  }

  /** Calls waiting for a place. */
  get waiting(): number {
    return this.#waiters.reduce((sum, w) => sum + w.endpoints.length, 0);
  }

  /**
   * Refunds a window lets through, each a read and a create: the account's limit over two calls,
   * or one endpoint's limit (each refund spends one call of each endpoint), whichever is less. By
   * default at the capacity this process can count on while its calls wait (`expectedCapacity`).
   */
  refundsPerWindow(capacity: BudgetCapacity = this.expectedCapacity()): number {
    return Math.max(1, Math.min(Math.floor(capacity.globalPerWindow / 2), capacity.endpointPerWindow));
  }

  /**
   * The capacity this process can count on while its calls wait, at today's penalty: a shared
   * budget counts on its fair share, not on what it holds this instant.
   */
  expectedCapacity(): BudgetCapacity {
    const global = this.#share === null ? this.capacity.globalPerWindow : Math.min(this.capacity.globalPerWindow, this.#share.expected(GLOBAL_FAMILY));
    const penalty = this.#penalty();
    return { globalPerWindow: Math.floor(global * penalty), endpointPerWindow: Math.floor(this.capacity.endpointPerWindow * penalty) };
  }

  /** Refunds the budget lets through in `ms` at full capacity. */
  refundsPer(ms: number): number {
    return Math.floor((this.refundsPerWindow(this.capacity) * ms) / BUDGET_WINDOW_MS);
  }

  /** Stripe answered 429: the whole process goes at half its rate for a while. */
  rateLimited(endpoint: string): void {
    this.counts.rateLimited[endpoint] = (this.counts.rateLimited[endpoint] ?? 0) + 1;
    this.#penaltyUntilMs = this.nowMs() + BUDGET_PENALTY_MS;
  }

  /** A call went out (counted for the figures). */
  called(endpoint: string, klass: BudgetClass): void {
    this.counts.calls[endpoint] = (this.counts.calls[endpoint] ?? 0) + 1;
    const key = `${klass} ${endpoint}`;
    this.counts.callsByClass[key] = (this.counts.callsByClass[key] ?? 0) + 1;
  }

  /** Whether a place is still held by its grant (a grant unused for too long has lost it). */
  holds(place: Place): boolean {
    return this.#places.includes(place) && this.nowMs() - place.grantedMs < BUDGET_GRANT_HOLD_MS;
  }

  giveBack(places: readonly Place[]): void {
    if (places.length === 0) return;
    this.#places = this.#places.filter((p) => !places.includes(p));
    this.pump();
  }

  /** Grant what fits, most urgent first; then wake when the window next has room. */
  pump(): void {
    this.#prune();
    for (;;) {
      const next = this.#next();
      if (!next) break;
      this.#waiters.splice(this.#waiters.indexOf(next), 1);
      next.resolve(this.#grant(next.klass, next.endpoints));
    }
    this.#giveUpTold();
    if (this.#waiters.length > 0) this.#share?.wanted();
    this.#wakeAtNextRoom();
    this.#holdWhileWaiting();
  }

  /** The waiters past their time whose share has since told its room, and found none for them: they leave the queue. */
  #giveUpTold(): void {
    const share = this.#share;
    if (share === null) return;
    const told = (w: Waiter) => w.giveUpAfter !== undefined && (share.known([GLOBAL_FAMILY, ...w.endpoints]) || share.answers() > w.giveUpAfter);
    for (const waiter of this.#waiters.filter(told)) waiter.giveUp?.();
  }

  /**
   * Keep the process alive exactly while a call waits for its place: the timers that wake it are
   * unref'd, and at a command's first Stripe call (npm run restore's refunds read) nothing else may
   * hold the event loop, so Node would end the process with the call never granted (exit 13).
   */
  #holdWhileWaiting(): void {
    if (this.#waiters.length > 0 && !this.#stopped) {
      this.#waitingHold ??= setInterval(() => undefined, WAITING_HOLD_MS);
    } else if (this.#waitingHold !== null) {
      clearInterval(this.#waitingHold);
      this.#waitingHold = null;
    }
  }

  #grant(klass: BudgetClass, endpoints: readonly string[]): BudgetGrant {
    const grantedMs = this.nowMs();
    const places = endpoints.map((endpoint) => ({ endpoint, klass, grantedMs, startMs: null }));
    this.#places.push(...places);
    this.counts.granted[klass] += endpoints.length;
    return new BudgetGrant(this, places);
  }

  /** The waiter to serve now: below its floor first, then by class, then by arrival; null when none fits. */
  #next(): Waiter | null {
    if (this.#waiters.length === 0) return null;
    const globalCap = this.current().globalPerWindow;
    const used = (klass: BudgetClass) => this.#places.filter((p) => p.klass === klass).length;
    const rank = (w: Waiter) => (used(w.klass) < BUDGET_FLOORS[w.klass] * globalCap ? 0 : 1) * 10 + BUDGET_CLASSES.indexOf(w.klass);
    const ordered = [...this.#waiters].sort((a, b) => rank(a) - rank(b) || a.seq - b.seq);
    // A class's first waiter that does not fit keeps the class's later waiters behind it, so a
    // class is served in arrival order; another class may still use an endpoint it leaves free.
    const blocked = new Set<BudgetClass>();
    for (const waiter of ordered) {
      if (blocked.has(waiter.klass)) continue;
      const ceiling = Math.max(1, Math.floor(BUDGET_CEILINGS[waiter.klass] * globalCap));
      if (used(waiter.klass) + waiter.endpoints.length <= ceiling && this.#fits(waiter.endpoints)) return waiter;
      blocked.add(waiter.klass);
    }
    return null;
  }

  #fits(endpoints: readonly string[]): boolean {
    if (this.#places.length + endpoints.length > this.#allowed(GLOBAL_FAMILY)) return false;
    for (const endpoint of new Set(endpoints)) {
      const wanted = endpoints.filter((e) => e === endpoint).length;
      const inWindow = this.#places.filter((p) => p.endpoint === endpoint).length;
      if (inWindow + wanted > this.#allowed(endpoint)) return false;
    }
    return true;
  }

  /** Drop the places whose second has passed; a grant held too long counts as started when it lapsed. */
  #prune(): void {
    const now = this.nowMs();
    this.#places = this.#places.filter((p) => {
      if (p.calling) return true;
      const startMs = p.startMs ?? (now - p.grantedMs >= BUDGET_GRANT_HOLD_MS ? p.grantedMs + BUDGET_GRANT_HOLD_MS : null);
      return startMs === null || startMs > now - BUDGET_WINDOW_MS;
    });
  }

  /** Wake when the oldest started place leaves the window, or the penalty ends, while anyone waits. */
  #wakeAtNextRoom(): void {
    if (this.#waiters.length === 0) return;
    const now = this.nowMs();
    // A call still out leaves no sooner than a second after its answer, which has not come: it
    // sets no wake-up of its own (one at its start would come due at once, every millisecond,
    // for as long as the call is out); the look again soon below finds the answer.
    const leaving = this.#places.filter((p) => !p.calling).map((p) => (p.startMs ?? p.grantedMs + BUDGET_GRANT_HOLD_MS) + BUDGET_WINDOW_MS);
    if (this.#penaltyUntilMs > now) leaving.push(this.#penaltyUntilMs);
    // A place granted and not used yet leaves a second after a use not known yet, and a share
    // may grow (its rounds pump the budget, but one may fail): look again soon.
    leaving.push(now + LOOK_AGAIN_MS);
    const atMs = Math.max(now + 1, Math.min(...leaving));
    if (atMs >= this.#timerAtMs && this.#cancelTimer) return;
    this.#cancelTimer?.();
    this.#timerAtMs = atMs;
    this.#cancelTimer = this.#clock.after(atMs - now, () => {
      this.#cancelTimer = null;
      this.#timerAtMs = Number.POSITIVE_INFINITY;
      this.pump();
    });
  }
}
