import type { RefundRequestBody } from '../../shared/api.ts';
import { assertNever } from '../../shared/statuses.ts';

/** The agent demo traffic asks as: its requests are journaled and shown under this name. */
export const DEMO_AGENT = 'demo';

/** Demo traffic's limits, each with its reason. */
export const demoLimits = {
  /** Requests per data folder, those of earlier runs included: a demo left running does not grow the journal forever. */
  requestsMax: 200,
  /** The quickest next request: an inbox that moves, not a flood an approver cannot follow. */
  intervalMsMin: 10_000,
  /** The slowest next request: something new within half a minute. */
  intervalMsMax: 30_000,
  /** The first request comes soon after start, so a newcomer's first look finds the inbox alive. */
  firstDelayMsMin: 1_000,
  firstDelayMsMax: 3_000,
} as const;

/**
 * The kinds of request demo traffic makes: one under every rule (cleared with no person), one
 * over the $50 rule (a person decides), one whose payment is refunded by hand after it is queued
 * (stale by the time a person decides), one on a disputed payment.
 */
export const DEMO_KINDS = ['routine', 'over_limit', 'stale', 'disputed'] as const;
/** One kind of demo request. */
export type DemoKind = (typeof DEMO_KINDS)[number];

/** How many of each kind one round of requests holds: every kind comes up in every round of ten. */
const ROUND: Readonly<Record<DemoKind, number>> = { routine: 4, over_limit: 3, stale: 2, disputed: 1 };

/** What one demo request does: the payment it makes, what it asks, what happens to the payment. */
export interface DemoPlan {
  kind: DemoKind;
  paymentCents: number;
  /** The refund asked for. */
  amountCents: number;
  reason: string | null;
  flags: string[];
  /** A refund made by hand in the sandbox once the request is queued (stale only). */
  handRefundCents: number | null;
  /** The payment is disputed before the request is made (disputed only). */
  dispute: boolean;
}

const ROUTINE_REASONS = [
  'Parcel arrived damaged',
  'Item not as described',
  'One item missing from the order',
  'Delivery was three days late',
  'Wrong size sent; the customer keeps it at a discount',
  'Coupon was not applied at checkout',
  'Shipping charged on a free-shipping order',
] as const;
const PERSON_REASONS = [
  'Charged twice',
  'Order never arrived',
  'Customer returned the whole order',
  'Cancelled before it shipped',
  'Subscription renewed after the customer cancelled',
  'Service outage: goodwill refund',
] as const;
const DISPUTED_REASONS = ['Customer does not recognise the charge', 'Charged twice', 'Order never arrived'] as const;
// Flags the rules let through (routine) and flags a person may need to see.
const ROUTINE_FLAGS = [[], [], ['first_order'], ['repeat_customer'], ['subscription']] as const;
const PERSON_FLAGS = [[], [], ['vip'], ['repeat_customer'], ['vip', 'repeat_customer'], ['subscription'], ['fraud_review']] as const;

/** A whole number from min to max, both included, from a draw in [0, 1). */
function between(random: () => number, min: number, max: number): number {
  return min + Math.floor(random() * (max - min + 1));
}

function pick<T>(random: () => number, values: readonly T[]): T {
  const value = values[Math.floor(random() * values.length)];
  if (value === undefined) throw new Error('demo: a pick from an empty list');
  return value;
}

/** A price as shops write them: whole dollars less a cent ($89.99). */
function priceCents(random: () => number, minDollars: number, maxDollars: number): number {
  return between(random, minDollars, maxDollars) * 100 - 1;
}

/** The next interval, from 10 to 30 s. */
export function nextDelayMs(random: () => number): number {
  return between(random, demoLimits.intervalMsMin, demoLimits.intervalMsMax);
}

/** The first request's delay, from 1 to 3 s. */
export function firstDelayMs(random: () => number): number {
  return between(random, demoLimits.firstDelayMsMin, demoLimits.firstDelayMsMax);
}

/** `demo-<n>` is the nth demo request of a data folder. */
export function demoRequestId(n: number): string {
  return `demo-${n}`;
}

/** n of `demo-<n>`, or null for any other id. */
export function demoRequestNumber(requestId: string): number | null {
  const match = /^demo-([1-9]\d{0,8})$/.exec(requestId);
  return match?.[1] === undefined ? null : Number(match[1]);
}

/** What the journal already holds of demo traffic: how many requests, and the highest n of `demo-<n>`. */
export interface DemoTally {
  count: number;
  lastNumber: number;
}

/** Tally the demo agent's requests among every request bound in the journal (repairs are a person's, not the agent's). */
export function tallyDemoRequests(requests: Iterable<{ id: string; agent: string; repair_of?: string } | null>): DemoTally {
  let count = 0;
  let lastNumber = 0;
  for (const request of requests) {
    if (request === null || request.agent !== DEMO_AGENT || request.repair_of !== undefined) continue;
    count += 1;
    lastNumber = Math.max(lastNumber, demoRequestNumber(request.id) ?? 0);
  }
  return { count, lastNumber };
}

/** The body an agent would send for this plan on this payment. */
export function demoRequestBody(requestId: string, paymentIntent: string, plan: DemoPlan): RefundRequestBody {
  return {
    request_id: requestId,
    payment_intent: paymentIntent,
    amount: plan.amountCents,
    ...(plan.reason === null ? {} : { reason: plan.reason }),
    flags: plan.flags,
  };
}

/**
 * Plans demo requests from a random source. Kinds come from shuffled rounds, so every kind shows
 * up within ten requests; the very first request of a data folder goes to a person on the default
 * route, so the inbox has an item within seconds of the first start.
 */
export class DemoPlanner {
  #round: DemoKind[] = [];

  constructor(private readonly random: () => number) {}

  /** The plan of request n (from 1). */
  plan(n: number): DemoPlan {
    if (n === 1) return this.overLimit({ paymentDollarsMax: 180, flags: [[], ['vip'], ['repeat_customer']] });
    const kind = this.nextKind();
    switch (kind) {
      case 'routine':
        return this.routine();
      case 'over_limit':
        return this.overLimit({ paymentDollarsMax: 400, flags: PERSON_FLAGS });
      case 'stale':
        return this.stale();
      case 'disputed':
        return this.disputed();
      default:
        return assertNever(kind);
    }
  }

  private nextKind(): DemoKind {
    if (this.#round.length === 0) {
      const round = DEMO_KINDS.flatMap((kind) => Array.from({ length: ROUND[kind] }, () => kind));
      // Fisher-Yates, so a round's order is as random as its draws.
      for (let i = round.length - 1; i > 0; i--) {
        const j = between(this.random, 0, i);
        [round[i], round[j]] = [round[j]!, round[i]!];
      }
      this.#round = round;
    }
    return this.#round.pop()!;
  }

  private reason(reasons: readonly string[]): string | null {
    // One in ten agents gives no reason at all, as real ones sometimes do.
    return this.random() < 0.1 ? null : pick(this.random, reasons);
  }

  private routine(): DemoPlan {
    const paymentCents = priceCents(this.random, 20, 150);
    const amountCents = between(this.random, 500, Math.min(5_000, paymentCents));
    return { kind: 'routine', paymentCents, amountCents, reason: this.reason(ROUTINE_REASONS), flags: [...pick(this.random, ROUTINE_FLAGS)], handRefundCents: null, dispute: false };
  }

  private overLimit(options: { paymentDollarsMax: number; flags: readonly (readonly string[])[] }): DemoPlan {
    const paymentCents = priceCents(this.random, 60, options.paymentDollarsMax);
    const amountCents = between(this.random, 5_001, paymentCents);
    return { kind: 'over_limit', paymentCents, amountCents, reason: this.reason(PERSON_REASONS), flags: [...pick(this.random, options.flags)], handRefundCents: null, dispute: false };
  }

  private stale(): DemoPlan {
    const paymentCents = priceCents(this.random, 90, 300);
    const amountCents = between(this.random, 5_001, paymentCents - 2_000);
    // Sometimes what is left still fits the request, sometimes not: both repairs come up.
    const handRefundCents = between(this.random, 1_000, paymentCents - 1_000);
    return { kind: 'stale', paymentCents, amountCents, reason: this.reason(PERSON_REASONS), flags: [...pick(this.random, PERSON_FLAGS)], handRefundCents, dispute: false };
  }

  private disputed(): DemoPlan {
    const paymentCents = priceCents(this.random, 30, 200);
    // Under $50, so the dispute is the one rule that sends it to a person.
    const amountCents = between(this.random, 1_000, Math.min(5_000, paymentCents));
    return { kind: 'disputed', paymentCents, amountCents, reason: this.reason(DISPUTED_REASONS), flags: [], handRefundCents: null, dispute: true };
  }
}
