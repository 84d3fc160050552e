import type { CurrentFacts, InboxItem, PaymentCustomer } from '../../shared/api.ts';
import type { JsonObject } from '../../shared/json.ts';
import type { InboxMemory } from '../inbox/projection.ts';
import { summaryItem } from '../inbox/summary.ts';
import type { PaymentFacts } from '../targets/stripe-refunds.ts';
import { CAPTURE_SPACING_MS, EVENT_HEADROOM_MS, factsLimits } from './limits.ts';

// What Stripe says about each open item's payment now, for display only. It lives beside the
// views, never in them: a rebuild of the views from the journal is unchanged by it, and nothing
// that decides (the gate, the inbox, a send) reads it; a send always reads Stripe again.

/** Where the cache's time and waits come from: the wall clock and timers, or a test's own. */
export interface FactsScheduler {
  /** Wall clock ms. */
  nowMs(): number;
  /** Run `task` once after `delayMs`; the answer cancels it. */
  after(delayMs: number, task: () => void): () => void;
}

/** The wall clock and Node's timers (unreferenced: a waiting read never keeps the process up). */
export const TIMER_SCHEDULER: FactsScheduler = {
  nowMs: () => Date.now(),
  after(delayMs, task) {
    const timer = setTimeout(task, delayMs);
    timer.unref();
    return () => clearTimeout(timer);
  },
};

/**
 * What the cache does when a read finds an open item's payment no longer as its escalation shows
 * it. The cache only notices; the inbox decides, on facts it reads itself.
 */
export interface MovedFactsHook {
  /** The facts the item's open escalation shows, or null when it is no open item now. */
  shownOn(effectId: string): Promise<JsonObject | null>;
  /** Show it again on facts read afresh; true when it was re-shown. It reads Stripe once, twice when it re-shows. */
  reshow(effectId: string): Promise<boolean>;
  /** A re-show failed: logged only; the next read that finds the payment moved tries again. */
  onError(effectId: string, error: unknown): void;
}

/** The chains that moved since the last catch-up, and for each the payment intent of its open item, or null when it is not one. */
export type ChainsMoved = (moved: ReadonlySet<string>, openPaymentOf: (effectId: string) => string | null) => void;

export interface CurrentFactsOptions {
  /** The payment's facts now, as the gate would read them for this item, and who paid (for the rows only). */
  capture(effectId: string, paymentIntent: string): Promise<DisplayRead>;
  /** Every open item now, caught up with the journal: effect id to payment intent. */
  openItems(): Promise<ReadonlyMap<string, string>>;
  /** Be told after each catch-up which chains moved; the answer stops it. */
  watch(listener: ChainsMoved): () => void;
  /** Tell the live pages that may see the item. */
  publish(effectId: string, current: CurrentFacts): void;
  /** A read failed: the last good figures stay, marked with `error`. */
  onError?(effectId: string, error: unknown): void;
  /** Told when a read finds an item's payment moved under it; its reads take turns of the same pace. */
  moved?: MovedFactsHook;
  scheduler?: FactsScheduler;
}

/**
 * One read for the display: the payment's facts, and who paid as the charge's billing details
 * name them (from the same read). The customer is shown on the rows and nowhere else: it is never
 * journaled, and nothing decides on it.
 */
export interface DisplayRead {
  facts: PaymentFacts;
  customer: PaymentCustomer | null;
}

/** What an item shows when a read fails after a good one. */
export const READ_FAILED = 'Stripe could not be read just now; these are the figures of the last good read';

interface Tracked {
  paymentIntent: string;
  current: CurrentFacts | null;
  /** When the last read of it started, whatever its cause; null before the first. */
  readAtMs: number | null;
  /** Reads started, so a slower, older read never overwrites a newer one. */
  reads: number;
}

/**
 * The current facts of every open item, read through the Stripe target when an item arrives,
 * when a webhook names its payment, and (with the background on) again once its last read is
 * 10 minutes old. One read at a time; all together at most 2 Stripe reads per second, a capture
 * counting as its 3 reads, so captures start at least 1.5 s apart; webhooks go first, then arrivals.
 * A webhook's read may start one capture ahead of that pace (EVENT_HEADROOM_MS), so the read the
 * pace just let go never holds it up.
 * A read that finds the payment no longer as the item shows it queues one re-show (the `moved`
 * hook), run after the arrivals and webhooks and paced as the captures it makes.
 */
export class CurrentFactsCache {
  readonly #options: CurrentFactsOptions;
  readonly #scheduler: FactsScheduler;
  /** The open items: at most one entry each, dropped when the item closes. */
  readonly #items = new Map<string, Tracked>();
  readonly #byPayment = new Map<string, Set<string>>();
  /** Open items to read first: arrivals and payment events (a set: a burst of events is one read). */
  readonly #urgent = new Set<string>();
  /** Of those, the ones a payment event named: what they show may be wrong now, so they go before arrivals. */
  readonly #events = new Set<string>();
  /** Open items whose last read found the payment moved under them: each gets one re-show. */
  readonly #moved = new Set<string>();
  /** Open items the background found due. */
  readonly #due = new Set<string>();
  #nextReadAtMs = Number.NEGATIVE_INFINITY;
  #reading: Promise<void> | null = null;
  #cancelWait: (() => void) | null = null;
  #running = false;
  #background = false;
  #unwatch: (() => void) | null = null;
  #idleWaiters: Array<() => void> = [];

  constructor(options: CurrentFactsOptions) {
    this.#options = options;
    this.#scheduler = options.scheduler ?? TIMER_SCHEDULER;
  }

  /** Start following the inbox: every open item is read once, then as above. */
  async start(options: { background: boolean }): Promise<void> {
    if (this.#running) return;
    this.#running = true;
    this.#background = options.background;
    this.#unwatch = this.#options.watch((moved, openPaymentOf) => this.#noteMoved(moved, openPaymentOf));
    const open = await this.#options.openItems();
    if (!this.#running) return;
    for (const [effectId, paymentIntent] of open) this.#track(effectId, paymentIntent);
    this.#pump();
  }

  /** Stop reading; a read in flight finishes first. */
  async stop(): Promise<void> {
    this.#running = false;
    this.#unwatch?.();
    this.#unwatch = null;
    this.#cancelWait?.();
    this.#cancelWait = null;
    await this.#reading;
    for (const wake of this.#idleWaiters.splice(0)) wake();
  }

  /** An open item's figures, or null before its first good read. */
  get(effectId: string): CurrentFacts | null {
    return this.#items.get(effectId)?.current ?? null;
  }

  /** An item as people are shown it: with its payment's current facts (null until read). */
  decorate(item: InboxItem): InboxItem {
    return { ...item, current: this.get(item.effect_id) };
  }

  /** A verified Stripe event named this payment (a refund by anyone, a charge, a dispute): read its open items first. */
  onPaymentEvent(paymentIntent: string): void {
    const effectIds = this.#byPayment.get(paymentIntent);
    if (effectIds === undefined) return;
    for (const effectId of effectIds) {
      this.#events.add(effectId);
      this.#urgent.add(effectId);
    }
    this.#pump();
  }

  /** Queue every open item whose last read is 10 minutes old: the background does it when it has nothing else to read; a test calls it by hand. */
  sweep(): void {
    this.#queueStale(this.#scheduler.nowMs());
    this.#pump();
  }

  /** Read one open item now, by hand (tests, an operator): it counts against the pace but does not wait for it. */
  async refresh(effectId: string): Promise<CurrentFacts | null> {
    await this.#read(effectId);
    // A re-show the read queued waits its turn of the pace.
    this.#pump();
    return this.get(effectId);
  }

  /** Resolves once nothing is queued or being read (or the cache stopped). */
  idle(): Promise<void> {
    if (this.#isIdle() || !this.#running) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  #noteMoved(moved: ReadonlySet<string>, openPaymentOf: (effectId: string) => string | null): void {
    for (const effectId of moved) {
      const paymentIntent = openPaymentOf(effectId);
      if (paymentIntent === null) this.#untrack(effectId);
      else this.#track(effectId, paymentIntent);
    }
    this.#pump();
  }

  /** A new open item arrived: read it first. One already followed stays as it is. */
  #track(effectId: string, paymentIntent: string): void {
    if (this.#items.has(effectId)) return;
    this.#items.set(effectId, { paymentIntent, current: null, readAtMs: null, reads: 0 });
    const effectIds = this.#byPayment.get(paymentIntent) ?? new Set<string>();
    effectIds.add(effectId);
    this.#byPayment.set(paymentIntent, effectIds);
    this.#urgent.add(effectId);
  }

  /** The item left the inbox (decided, closed): its figures are forgotten. */
  #untrack(effectId: string): void {
    const tracked = this.#items.get(effectId);
    if (tracked === undefined) return;
    this.#items.delete(effectId);
    this.#urgent.delete(effectId);
    this.#events.delete(effectId);
    this.#moved.delete(effectId);
    this.#due.delete(effectId);
    const effectIds = this.#byPayment.get(tracked.paymentIntent);
    effectIds?.delete(effectId);
    if (effectIds?.size === 0) this.#byPayment.delete(tracked.paymentIntent);
  }

  /** Start the next read the pace allows, or wait for it; with nothing to read, wait for the next item to come due. */
  #pump(): void {
    if (!this.#running || this.#reading !== null) return;
    this.#cancelWait?.();
    this.#cancelWait = null;
    const nowMs = this.#scheduler.nowMs();
    if (this.#background && this.#urgent.size === 0 && this.#moved.size === 0 && this.#due.size === 0) this.#queueStale(nowMs);
    const event = first(this.#events);
    const next = event ?? first(this.#urgent) ?? first(this.#moved) ?? first(this.#due);
    if (next === undefined) {
      for (const wake of this.#idleWaiters.splice(0)) wake();
      if (this.#background) this.#waitForStale(nowMs);
      return;
    }
    const waitMs = this.#nextReadAtMs - nowMs - (next === event ? EVENT_HEADROOM_MS : 0);
    if (waitMs > 0) {
      this.#wait(waitMs);
      return;
    }
    const work = this.#urgent.has(next) || !this.#moved.has(next) ? this.#read(next) : this.#reshow(next);
    this.#urgent.delete(next);
    this.#events.delete(next);
    this.#moved.delete(next);
    this.#due.delete(next);
    this.#reading = work.finally(() => {
      this.#reading = null;
      this.#pump();
    });
  }

  #wait(waitMs: number): void {
    this.#cancelWait = this.#scheduler.after(waitMs, () => {
      this.#cancelWait = null;
      this.#pump();
    });
  }

  #queueStale(nowMs: number): void {
    for (const [effectId, tracked] of this.#items) {
      if (tracked.readAtMs === null || nowMs - tracked.readAtMs >= factsLimits.itemRefreshMsMin) this.#due.add(effectId);
    }
  }

  /** Wake when the item read longest ago comes due again. */
  #waitForStale(nowMs: number): void {
    let earliestMs = Number.POSITIVE_INFINITY;
    for (const tracked of this.#items.values()) {
      if (tracked.readAtMs !== null) earliestMs = Math.min(earliestMs, tracked.readAtMs + factsLimits.itemRefreshMsMin);
    }
    if (earliestMs !== Number.POSITIVE_INFINITY) this.#wait(Math.max(0, earliestMs - nowMs));
  }

  async #read(effectId: string): Promise<void> {
    const tracked = this.#items.get(effectId);
    if (tracked === undefined) return;
    const atMs = this.#scheduler.nowMs();
    tracked.readAtMs = atMs;
    const read = ++tracked.reads;
    this.#nextReadAtMs = Math.max(this.#nextReadAtMs, atMs) + CAPTURE_SPACING_MS;
    let current: CurrentFacts;
    try {
      current = currentFactsOf(await this.#options.capture(effectId, tracked.paymentIntent), atMs);
    } catch (error) {
      this.#options.onError?.(effectId, error);
      // Nothing good was read yet: there is nothing to show, and the next read tries again.
      if (tracked.current === null) return;
      current = { ...tracked.current, error: READ_FAILED };
    }
    // The item closed while Stripe was read, or a newer read started: this one is not shown.
    if (this.#items.get(effectId) !== tracked || tracked.reads !== read) return;
    tracked.current = current;
    this.#options.publish(effectId, current);
    if (current.error === null) await this.#noteIfMoved(effectId, current);
  }

  /** Queue a re-show when this good read differs from what the item's escalation shows. */
  async #noteIfMoved(effectId: string, current: CurrentFacts): Promise<void> {
    const hook = this.#options.moved;
    if (hook === undefined) return;
    try {
      const shown = await hook.shownOn(effectId);
      if (shown !== null && paymentMoved(shown, current) && this.#items.has(effectId)) this.#moved.add(effectId);
    } catch (error) {
      hook.onError(effectId, error);
    }
  }

  /** Ask the inbox to show the item again; its reads count against the pace like a capture's. */
  async #reshow(effectId: string): Promise<void> {
    const hook = this.#options.moved;
    if (hook === undefined || !this.#items.has(effectId)) return;
    this.#nextReadAtMs = Math.max(this.#nextReadAtMs, this.#scheduler.nowMs()) + CAPTURE_SPACING_MS;
    try {
      // Re-shown, it read Stripe a second time: that capture is paid for before the next read.
      if (await hook.reshow(effectId)) this.#nextReadAtMs += CAPTURE_SPACING_MS;
    } catch (error) {
      hook.onError(effectId, error);
    }
  }

  #isIdle(): boolean {
    return this.#reading === null && this.#urgent.size === 0 && this.#moved.size === 0 && this.#due.size === 0;
  }
}

/** The facts of a good read, as people are shown them. */
export function currentFactsOf({ facts, customer }: DisplayRead, asOfMs: number): CurrentFacts {
  return {
    payment_intent: facts.payment_intent,
    currency: facts.currency,
    amount_received: facts.amount_received,
    refunded_by_others: facts.refunded_by_others,
    refunded_outside: facts.refunded_outside,
    remaining: facts.amount_received - facts.refunded_by_others,
    disputed: facts.disputed,
    as_of_ms: asOfMs,
    error: null,
    customer,
  };
}

/** The figures of a read that a decision compares, by the name its facts give them. */
const COMPARED_FACTS = ['payment_intent', 'currency', 'amount_received', 'refunded_by_others', 'refunded_outside', 'disputed'] as const;

/**
 * True when a read of the payment differs from the facts an item's escalation shows, in any
 * figure those facts hold: approving what it shows would then be refused as stale (a person's
 * approval is checked on the exact facts), so it is worth showing again. A figure the shown facts
 * do not hold (an older journal's) is not compared.
 */
export function paymentMoved(shown: JsonObject, current: CurrentFacts): boolean {
  return COMPARED_FACTS.some((field) => Object.hasOwn(shown, field) && shown[field] !== current[field]);
}

/** The payment intent of an open item (an escalation waiting for a person), or null for any other chain. */
export function openPaymentIntentOf(inbox: InboxMemory, effectId: string): string | null {
  const summary = inbox.chains.get(effectId);
  if (summary === undefined || !inbox.owned(summary)) return null;
  return summaryItem(summary)?.request.payment_intent ?? null;
}

/** The facts an open item's escalation shows, or null for any other chain. */
export function shownFactsOf(inbox: InboxMemory, effectId: string): JsonObject | null {
  const summary = inbox.chains.get(effectId);
  if (summary === undefined || !inbox.owned(summary)) return null;
  return summaryItem(summary)?.facts ?? null;
}

/** Every open item of the inbox: effect id to payment intent. */
export function openItemsOf(inbox: InboxMemory): Map<string, string> {
  const open = new Map<string, string>();
  for (const effectId of inbox.chains.keys()) {
    const paymentIntent = openPaymentIntentOf(inbox, effectId);
    if (paymentIntent !== null) open.set(effectId, paymentIntent);
  }
  return open;
}

function first(set: ReadonlySet<string>): string | undefined {
  for (const value of set) return value;
  return undefined;
}
