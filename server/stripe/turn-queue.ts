import Stripe from 'stripe';
import type { RefundRequest } from '../../shared/api.ts';
import type { Entry } from '../../shared/entries.ts';
import { limits } from '../../shared/limits.ts';
import { whyFor } from '../../shared/statuses.ts';
import type { Inbox } from '../inbox/inbox.ts';
import { boundRequest, waitsItsTurn } from '../inbox/state.ts';
import type { JournalStore } from '../journal/store.ts';
import type { BudgetGrant, StripeBudget } from './budget.ts';
import { CREATE_REFUND, READ_PAYMENT, withStripeClass } from './paced-client.ts';

/**
 * Requests waiting their turn to reach Stripe. When the budget has no room for a new request's
 * read and create, the request is journaled bound to its payload with no facts yet (`waitsItsTurn`)
 * and the agent is answered 202 at once; the queue then takes each its read and create together,
 * in arrival order, as the budget allows, and the inbox decides it as it would have in the
 * handler. A request waiting survives a crash: the journal holds it, and start-up queues every
 * one again in journal order. It is never escalated for want of a read: a read that fails is
 * tried again at the back of the queue; only a payment Stripe does not know is refused.
 */

/** How many queued requests are worked on at once; the budget paces them, this bounds memory. */
const WORKERS_MAX = 32;
/** A request whose read failed (Stripe down) goes to the back of the queue after this long. */
const RETRY_AFTER_FAILURE_MS = 2_000;

export interface TurnQueueOptions {
  budget: StripeBudget;
  journal: JournalStore;
  inbox: Pick<Inbox, 'submit' | 'name' | 'options'>;
  /** The application clock, for the PROPOSED's `at_ms`. */
  nowMs: () => number;
  /** Told each time the queue is done with a request for now: decided, or back to wait. */
  onSettled?: (effectId: string) => void;
  onError?: (effectId: string, error: unknown) => void;
  /** How the queue waits before a failed request goes to the back (default: a timer that keeps no process alive). */
  sleep?: (ms: number) => Promise<void>;
  /**
   * Requests waiting their turn on the whole journal, every process's (the views count them): the
   * bound is the account's, so processes sharing it share the bound too. Default: this queue's own.
   */
  waitingOnJournal?: () => number;
}

/** A timer that never keeps the process alive. */
function sleepUnref(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

/** The queue of requests waiting their turn for Stripe. */
export class TurnQueue {
  readonly #options: TurnQueueOptions;
  readonly #queue: string[] = [];
  readonly #queued = new Set<string>();
  #workers = 0;
  #taking = false;
  #stopped = false;

  constructor(options: TurnQueueOptions) {
    this.#options = options;
  }

  /** Requests waiting now. */
  get length(): number {
    return this.#queue.length + this.#workers;
  }

  /**
   * Whether the requests waiting already hold what the account's budget sends in
   * `limits.stripeTurnQueueMs`, counted over every process on the journal: beyond it, agents are told 429.
   */
  get full(): boolean {
    const waiting = Math.max(this.length, this.#options.waitingOnJournal?.() ?? 0);
    return waiting >= this.#options.budget.refundsPer(limits.stripeTurnQueueMs);
  }

  /**
   * How long a request can expect to wait for its turn, in ms: `effectId`'s place in the queue when
   * it is queued here, else the back of the queue (where a new request would go).
   */
  expectedWaitMs(effectId?: string): number {
    const at = effectId === undefined ? -1 : this.#queue.indexOf(effectId);
    const ahead = at >= 0 ? at + 1 : this.length + 1;
    return Math.ceil(ahead / this.#options.budget.refundsPerWindow()) * 1_000;
  }

  /**
   * A new request's read and create, now or within `limits.stripeTurnWaitMs`, when nobody waits
   * ahead of it; null when it must wait its turn (the handler then journals it and answers 202).
   */
  async admit(): Promise<BudgetGrant | null> {
    if (this.length > 0) return null;
    return this.#options.budget.takeWithin('request', [READ_PAYMENT, CREATE_REFUND], limits.stripeTurnWaitMs);
  }

  /**
   * Journal a new request as waiting its turn: bound to its payload with no facts yet, with the
   * `x-request-id` it came with. False when the chain was bound first by another request under the
   * same id (nothing written).
   */
  async accept(effectId: string, request: RefundRequest, httpRequestId?: string): Promise<boolean> {
    const { inbox } = this.#options;
    const written = await this.#options.journal.appendIf('PROPOSED', effectId, (chain) => (chain.length > 0 ? 'bound' : null), {
      agent: inbox.name,
      lease: null,
      premises: null,
      effect: inbox.options.effectOf(request),
      request,
      at_ms: this.#options.nowMs(),
      ...(httpRequestId === undefined ? {} : { http_request_id: httpRequestId }),
    });
    return written.blocker === null;
  }

  /** Put a waiting request at the back of the queue (once). */
  enqueue(effectId: string): void {
    if (this.#stopped || this.#queued.has(effectId)) return;
    this.#queued.add(effectId);
    this.#queue.push(effectId);
    void this.#take();
  }

  /** Queue again, in journal order, the waiting requests a restart found. */
  adopt(chains: Iterable<readonly Entry[]>): void {
    const waiting = [...chains].filter(waitsItsTurn).sort((a, b) => a[0]!.ts_ms - b[0]!.ts_ms || a[0]!.effect_id.localeCompare(b[0]!.effect_id));
    for (const chain of waiting) this.enqueue(chain[0]!.effect_id);
  }

  /** Whether this process holds the request in its queue. */
  holds(effectId: string): boolean {
    return this.#queued.has(effectId);
  }

  stop(): void {
    this.#stopped = true;
  }

  /** Take the budget for the queue's head, in order, one grant at a time; work on each beside the others. */
  async #take(): Promise<void> {
    if (this.#taking) return;
    this.#taking = true;
    try {
      while (!this.#stopped && this.#queue.length > 0 && this.#workers < WORKERS_MAX) {
        const grant = await this.#options.budget.take('request', [READ_PAYMENT, CREATE_REFUND]);
        const effectId = this.#queue.shift();
        if (effectId === undefined || this.#stopped) {
          grant.release();
          break;
        }
        this.#workers += 1;
        void this.#work(effectId, grant);
      }
    } finally {
      this.#taking = false;
    }
  }

  async #work(effectId: string, grant: BudgetGrant): Promise<void> {
    let again = false;
    try {
      const chain = await this.#options.journal.entries(effectId);
      const request = boundRequest(chain);
      // Another process (or a retry of the agent's) took it up meanwhile: its chain says what stands.
      if (request === null || !waitsItsTurn(chain)) return;
      try {
        await withStripeClass('request', () => this.#options.inbox.submit(request), grant);
      } catch (error) {
        if (await this.#refuseMissingPayment(effectId, error)) return;
        this.#options.onError?.(effectId, error);
        again = waitsItsTurn(await this.#options.journal.entries(effectId));
      }
    } catch (error) {
      this.#options.onError?.(effectId, error);
    } finally {
      grant.release();
      this.#workers -= 1;
      this.#queued.delete(effectId);
      if (again) void (this.#options.sleep ?? sleepUnref)(RETRY_AFTER_FAILURE_MS).then(() => this.enqueue(effectId));
      this.#options.onSettled?.(effectId);
      void this.#take();
    }
  }

  /** Stripe does not know the payment the request names: refused for good, with nothing sent. */
  async #refuseMissingPayment(effectId: string, error: unknown): Promise<boolean> {
    if (!(error instanceof Stripe.errors.StripeError) || error.statusCode !== 404) return false;
    await this.#options.journal.appendIf('REFUSED', effectId, (chain) => (waitsItsTurn(chain) ? null : 'moved'), {
      code: 'payment_missing',
      reason: whyFor('payment_missing'),
    });
    return true;
  }
}
