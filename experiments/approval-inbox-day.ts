import type { JsonObject } from '../shared/json.ts';
import { effectIdFor } from '../server/journal/hash.ts';
import { SimulatedCrash } from '../server/gate/target.ts';
import type { InboxRequest } from '../server/inbox/inbox.ts';
import { MemoryPayments } from '../server/targets/memory-payments.ts';
import { simulatorPolicy } from '../test/support/inbox-world.ts';
import { PyRandom } from '../test/support/py-random.ts';

/**
 * The synthetic day of approval_inbox (inbox §20): the mix, its world, and the two baselines
 * that have no gate. Money is whole dollars, as in the script; the mix is an assumption.
 */

/** The day's constants (inbox §20.1). Times are in seconds, as the script counts them. */
export const DAY = {
  seed: 4471,
  /** Rules clear refunds up to this many dollars. */
  limitDollars: 50,
  arrivalS: 300,
  /** Mean reviewer latency: exponential, 90 minutes. */
  latencyS: 5400,
  /** Over-limit requests refunded in full by hand after approval. */
  staleApprovals: 3,
  /** Over-limit requests refunded a third by hand after approval. */
  partialByHand: 2,
  /** The order behind every request except over-limit ones. */
  orderDollars: 400,
} as const;

export const KINDS = ['routine', 'over_limit', 'flagged', 'ineligible', 'crash', 'refunded_by_hand', 'duplicate'] as const;
export type DayKind = (typeof KINDS)[number];

/** One delivery of the day, with the script's fields. */
export type DayRequest = InboxRequest & {
  order: string;
  amount: number;
  kind: DayKind;
  flagged: boolean;
  ineligible: boolean;
  by_hand: number;
  crash: boolean;
};

/**
 * The 100 deliveries in arrival order. The draws follow the script exactly: amounts in
 * generation order, then `sample` for the duplicates, then `shuffle` of all 100, all on one
 * generator, so the same seed gives the same day as CPython's `random.Random(4471)`.
 */
export function generateDay(rng: PyRandom): DayRequest[] {
  const made: DayRequest[] = [];
  const make = (kind: DayKind, amount: number, extra: Partial<DayRequest> = {}): DayRequest => {
    const n = String(made.length + 1).padStart(3, '0');
    const request: DayRequest = { id: `req-${n}`, order: `ord-${n}`, amount, kind, flagged: false, ineligible: false, by_hand: 0, crash: false, ...extra };
    made.push(request);
    return request;
  };
  const small = () => rng.randint(5, DAY.limitDollars);
  const routine = Array.from({ length: 60 }, () => make('routine', small()));
  for (let i = 0; i < 15; i++) {
    const amount = rng.randint(DAY.limitDollars + 1, 300);
    const byHand = i < DAY.staleApprovals ? amount : i < DAY.staleApprovals + DAY.partialByHand ? Math.floor(amount / 3) : 0;
    make('over_limit', amount, { by_hand: byHand });
  }
  for (let i = 0; i < 5; i++) make('flagged', small(), { flagged: true });
  for (let i = 0; i < 5; i++) make('ineligible', small(), { ineligible: true });
  for (let i = 0; i < 5; i++) make('crash', small(), { crash: true });
  for (let i = 0; i < 5; i++) {
    const amount = small();
    make('refunded_by_hand', amount, { by_hand: amount });
  }
  const duplicates = rng.sample(routine, 5).map((r): DayRequest => ({ ...r, kind: 'duplicate' }));
  const day = [...made, ...duplicates];
  rng.shuffle(day);
  return day;
}

/** The first delivery of each request id, in arrival order. */
export function uniqueRequests(day: readonly DayRequest[]): DayRequest[] {
  const seen = new Map<string, DayRequest>();
  for (const r of day) if (!seen.has(r.id)) seen.set(r.id, r);
  return [...seen.values()];
}

/**
 * The tier-1 simulator of the day (inbox §20.3). A pending hand refund lands on the first
 * premise check or apply touching its order, never on a capture, so rules run on captured facts
 * cannot see it. A crash order's first send commits and then loses its answer, once.
 */
export class DayPayments extends MemoryPayments {
  readonly #handPending = new Map<string, number>();
  readonly #crashPending = new Set<string>();

  constructor(day: readonly DayRequest[]) {
    super(1);
    for (const r of uniqueRequests(day)) {
      this.addOrder(r.order, r.kind === 'over_limit' ? r.amount : DAY.orderDollars, !r.ineligible);
      if (r.by_hand > 0) this.#handPending.set(r.order, r.by_hand);
      if (r.crash) this.#crashPending.add(r.order);
    }
    this.onTouch = (order) => {
      const amount = this.#handPending.get(order);
      if (amount === undefined) return;
      this.#handPending.delete(order);
      this.refundByHand(order, amount, 'support-by-hand');
    };
  }

  override async apply(effectId: string, effect: JsonObject): Promise<JsonObject> {
    if (this.#crashPending.delete(effect.order as string)) this.injectFault('crash_after');
    return super.apply(effectId, effect);
  }
}

/** What each request should have been refunded: nothing when flagged or ineligible, else its amount. */
export function expectedDollars(r: DayRequest): number {
  return r.flagged || r.ineligible ? 0 : r.amount;
}

/** Unique orders whose refunded total is not what it should be. */
export function wrongOrders(day: readonly DayRequest[], target: MemoryPayments): string[] {
  return uniqueRequests(day)
    .filter((r) => target.refundedTotal(r.order) !== expectedDollars(r))
    .map((r) => r.order);
}

/** The systems compared on the day. */
export const DAY_SYSTEMS = ['everyone approves', 'rules only', 'rules + Interlock'] as const;
export type DaySystem = (typeof DAY_SYSTEMS)[number];

/** One system's line of the headline table. */
export interface DayOutcome {
  reviews: number;
  wrong: number;
}

/** Send with an idempotency key and no gate; a lost answer is retried with the same key. */
async function sendWithKey(target: DayPayments, r: DayRequest): Promise<void> {
  const effectId = effectIdFor(r.id);
  const effect = { order: r.order, amount: r.amount };
  try {
    await target.apply(effectId, effect);
  } catch (error) {
    if (!(error instanceof SimulatedCrash)) throw error;
    await target.apply(effectId, effect);
  }
}

/**
 * A baseline with no gate (inbox §20.5). The reviewer rejects what the captured facts show is
 * flagged or ineligible and approves the rest; approved requests are sent later in the day.
 */
export async function runBaseline(day: readonly DayRequest[], system: Exclude<DaySystem, 'rules + Interlock'>): Promise<DayOutcome> {
  const target = new DayPayments(day);
  const policy = simulatorPolicy({ limit: DAY.limitDollars });
  const later: DayRequest[] = [];
  let reviews = 0;
  for (const r of day) {
    const facts = target.capture(r.order);
    if (system === 'rules only' && policy.evaluate(r, facts).passed) {
      await sendWithKey(target, r);
      continue;
    }
    reviews += 1;
    if (!(r.flagged || facts.eligible !== true)) later.push(r);
  }
  for (const r of later) await sendWithKey(target, r);
  return { reviews, wrong: wrongOrders(day, target).length };
}

/** The day's deliveries from a fresh generator on the seed. */
export function dayFromSeed(): DayRequest[] {
  return generateDay(new PyRandom(DAY.seed));
}
