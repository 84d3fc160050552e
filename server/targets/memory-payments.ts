import type { Dispatched } from '../../shared/entries.ts';
import { isJsonObject, type Json, type JsonObject } from '../../shared/json.ts';
import { limits } from '../../shared/limits.ts';
import { effectAmountOf, parseRefundEffect, refundEffectFault } from '../refunds/effect.ts';
import { diffFacts, judgeRefundFacts, repairsThatFit } from '../gate/premises.ts';
import { type ExplainOptions, type Explained, SimulatedCrash, type Target, TargetRejectedError, type Tier } from '../gate/target.ts';
import type { PaymentFacts } from './stripe-refunds.ts';

/** An order the simulated payments service can refund. */
export interface Order {
  amountCents: number;
  eligible: boolean;
}

/** One refund in the simulated ledger; `effectId` is who sent it (a hand refund has its own tag). */
export interface MemoryRefund {
  effectId: string;
  order: string;
  amountCents: number;
}

/** The facts a refund decision relies on, as captured from the simulated service. */
export interface OrderFacts extends JsonObject {
  order: string;
  eligible: boolean;
  amount: number;
  refunded: number;
}

/** A one-shot fault on the next apply. */
export type ApplyFault = 'crash_before' | 'crash_after';

/**
 * An in-memory payments service for experiments and tests, with the three cooperation tiers:
 * tier 1 dedupes on the effect id (an idempotency key), tier 2 can only look a refund up by
 * it, tier 3 can do neither. Faults are injected one apply at a time.
 */
export class MemoryPayments implements Target {
  readonly orders = new Map<string, Order>();
  readonly refunds: MemoryRefund[] = [];
  readonly #keys = new Map<string, MemoryRefund>();
  readonly #faults: ApplyFault[] = [];
  readonly queryable: boolean;
  readonly dedupWindowMs = limits.stripeKeyWindowMs;
  /** Called before any premise check or apply touches an order: where a pending hand refund can land. */
  onTouch: ((order: string) => void) | null = null;

  constructor(readonly tier: Tier) {
    this.queryable = tier !== 3;
  }

  addOrder(id: string, amountCents: number, eligible = true): void {
    this.orders.set(id, { amountCents, eligible });
  }

  /** A refund made by hand, outside the gate. */
  refundByHand(order: string, amountCents: number, tag = 'dashboard'): void {
    this.refunds.push({ effectId: tag, order, amountCents });
  }

  /** Make the next apply die before it does anything, or after the refund is recorded. */
  injectFault(fault: ApplyFault): void {
    this.#faults.push(fault);
  }

  /** Forget every idempotency key, as a provider does after its window. */
  pruneKeys(): void {
    this.#keys.clear();
  }

  /** Total refunded on an order, hand refunds included. */
  refundedTotal(order: string, except?: string): number {
    return this.refunds.filter((r) => r.order === order && r.effectId !== except).reduce((sum, r) => sum + r.amountCents, 0);
  }

  /** The facts as a decision sees them now. */
  capture(order: string): OrderFacts {
    const found = this.orders.get(order);
    return { order, eligible: found?.eligible ?? false, amount: found?.amountCents ?? 0, refunded: this.refundedTotal(order) };
  }

  invalidEffect(effect: JsonObject): string | null {
    if (typeof effect.order !== 'string') return 'order must be a string';
    if (!Number.isSafeInteger(effect.amount) || (effect.amount as number) <= 0) return 'amount must be a positive integer of cents';
    return null;
  }

  async apply(effectId: string, effect: JsonObject): Promise<JsonObject> {
    const fault = this.#faults.shift();
    if (fault === 'crash_before') throw new SimulatedCrash('crashed before the send');
    const order = effect.order as string;
    this.onTouch?.(order);
    const refund = { effectId, order, amountCents: effect.amount as number };
    let status = 'ok';
    const keyed = this.tier === 1 ? this.#keys.get(effectId) : undefined;
    if (keyed) {
      status = keyed.order === order && keyed.amountCents === refund.amountCents ? 'already_processed' : 'key_reused_with_different_params';
    } else {
      if (this.tier === 1) this.#keys.set(effectId, refund);
      this.refunds.push(refund);
    }
    if (fault === 'crash_after') throw new SimulatedCrash('crashed after the send, before the answer');
    return { status };
  }

  async query(effectId: string): Promise<JsonObject | null> {
    if (!this.queryable) throw new Error('this service has no lookup');
    const found = this.refunds.find((r) => r.effectId === effectId);
    return found ? { order: found.order, amount: found.amountCents } : null;
  }

  /** At most one violation, in the order a person would check them. */
  validatePremises(premises: OrderFacts, effectId: string): string[] {
    const order = this.orders.get(premises.order);
    if (!order) return ['order gone'];
    if (order.eligible !== premises.eligible) return [`eligible: was ${premises.eligible}, now ${order.eligible}`];
    if (order.amountCents !== premises.amount) return [`amount: was ${premises.amount}, now ${order.amountCents}`];
    const others = this.refundedTotal(premises.order, effectId);
    if (typeof premises.refunded === 'number' && others !== premises.refunded) {
      return [`refunded: was ${premises.refunded}, now ${others}`];
    }
    return [];
  }

  async explain(premises: unknown, effectId: string, effect: JsonObject): Promise<Explained> {
    const facts = premises as OrderFacts;
    this.onTouch?.(facts.order);
    const violations = this.validatePremises(facts, effectId);
    if (violations.length === 0) return { violations, changes: [], repairs: [] };
    const order = this.orders.get(facts.order);
    if (!order) return { violations, changes: [{ field: 'order', was: facts.order, now: null }], repairs: [] };
    const others = this.refundedTotal(facts.order, effectId);
    const now: JsonObject = { eligible: order.eligible, amount: order.amountCents, refunded: others };
    const was: JsonObject = {};
    const shown: JsonObject = {};
    for (const key of Object.keys(now)) {
      if (key in facts) {
        was[key] = facts[key] ?? null;
        shown[key] = now[key] ?? null;
      }
    }
    const repairs =
      order.eligible && order.amountCents === facts.amount
        ? repairsThatFit(effect.amount as number, order.amountCents - others, order.amountCents)
        : [];
    return { violations, changes: diffFacts(was, shown), repairs };
  }
}

/** A payment intent of the Stripe-shaped memory target. */
export interface MemoryPayment {
  /** In the smallest unit of `currency`. */
  amountCents: number;
  /** As Stripe writes it: `usd`, `jpy`. */
  currency: string;
  disputed: boolean;
}

/** The refund statuses the Stripe-shaped memory target moves a refund through. */
export type PaymentRefundStatus = 'pending' | 'succeeded' | 'failed';

/** One refund on a payment; `effectId` is null for a refund made outside Interlock (the dashboard). */
export interface PaymentRefund {
  id: string;
  paymentIntent: string;
  amountCents: number;
  effectId: string | null;
  status: PaymentRefundStatus;
  createdMs: number;
}

/**
 * A Stripe-shaped in-memory refunds service, for the simulator: payment intents that can be
 * disputed, refunds with ids and statuses, idempotency keys forgotten after Stripe's window (on
 * the wall clock given), and the Stripe target's facts and judgement (stripe-refunds.ts): payloads
 * are `{payment_intent, amount}`, an open dispatch reserves its payment and counts as refunded, and
 * a refund the rules cleared may see Interlock's own refunds move the facts as long as it still
 * fits. The tiers are MemoryPayments'. Unlike Stripe it does not refuse a refund larger than what
 * is left, so an over-refund the gate lets through shows in the ledger instead of as an error.
 * MemoryPayments stays as it was: the experiments' published results were made with it.
 */
export class MemoryRefunds implements Target {
  readonly payments = new Map<string, MemoryPayment>();
  readonly refunds: PaymentRefund[] = [];
  readonly #keys = new Map<string, { refund: PaymentRefund; atMs: number }>();
  readonly queryable: boolean;
  readonly dedupWindowMs = limits.stripeKeyWindowMs;

  constructor(
    readonly tier: Tier,
    private readonly wallClockMs: () => number,
  ) {
    this.queryable = tier !== 3;
  }

  /** A payment of `amountCents` in the smallest unit of `currency`. */
  addPayment(paymentIntent: string, amountCents: number, currency = 'usd'): void {
    this.payments.set(paymentIntent, { amountCents, currency, disputed: false });
  }

  /** A refund made by hand in the dashboard, outside the gate. */
  refundByHand(paymentIntent: string, amountCents: number): PaymentRefund {
    return this.record(paymentIntent, amountCents, null);
  }

  /** The customer disputes the payment: from now on its refunds are refused, as Stripe does. */
  dispute(paymentIntent: string): void {
    const payment = this.payments.get(paymentIntent);
    if (payment) payment.disputed = true;
  }

  /** The refund reaches its final status, as Stripe reports it later. */
  settle(refundId: string, status: Exclude<PaymentRefundStatus, 'pending'>): void {
    const refund = this.refunds.find((r) => r.id === refundId);
    if (refund?.status === 'pending') refund.status = status;
  }

  /** An open dispatch of a refund reserves its payment. */
  reservationKey(effect: JsonObject): string | null {
    return parseRefundEffect(effect)?.payment_intent ?? null;
  }

  invalidEffect(effect: JsonObject): string | null {
    const fault = refundEffectFault(effect);
    if (fault === 'fields') return 'a refund effect has exactly payment_intent and amount';
    if (fault === 'payment_intent') return 'payment_intent must be a Stripe payment intent id (pi_...)';
    if (fault === 'amount') return `amount must be a whole number of cents from 1 to ${limits.refundCentsMax}`;
    return null;
  }

  async apply(effectId: string, effect: JsonObject): Promise<JsonObject> {
    // Checked by invalidEffect before anything is written: a refund it is, read as one.
    const asked = parseRefundEffect(effect);
    if (asked === null) throw new TargetRejectedError('400 parameter_invalid: a refund effect has exactly payment_intent and amount');
    const { payment_intent: paymentIntent, amount: amountCents } = asked;
    if (this.tier === 1) {
      const keyed = this.#keys.get(effectId);
      if (keyed && this.wallClockMs() - keyed.atMs < this.dedupWindowMs) {
        const same = keyed.refund.paymentIntent === paymentIntent && keyed.refund.amountCents === amountCents;
        if (!same) throw new TargetRejectedError('400 idempotency_error: the key was used with other parameters');
        return { status: 'already_processed', refund: keyed.refund.id, amount: amountCents };
      }
    }
    const payment = this.payments.get(paymentIntent);
    if (!payment) throw new TargetRejectedError(`404 resource_missing: no payment intent ${paymentIntent}`);
    if (payment.disputed) throw new TargetRejectedError('400 charge_disputed: the charge is disputed and cannot be refunded');
    const refund = this.record(paymentIntent, amountCents, effectId);
    if (this.tier === 1) this.#keys.set(effectId, { refund, atMs: this.wallClockMs() });
    return { status: 'ok', refund: refund.id, amount: amountCents };
  }

  /** The id of the refund this effect sent, in any status, or null. */
  async query(effectId: string): Promise<Json> {
    if (!this.queryable) throw new Error('this service has no lookup');
    return this.refunds.find((r) => r.effectId === effectId)?.id ?? null;
  }

  /**
   * The facts now, as StripeRefunds.capture reads them: refunds that did not fail, plus the open
   * dispatches (`reserved`) whose refund does not show yet; `exceptEffectId`'s own refund is left out.
   */
  capture(paymentIntent: string, exceptEffectId?: string, reserved: readonly Dispatched[] = []): PaymentFacts {
    const payment = this.payments.get(paymentIntent);
    if (!payment) throw new Error(`404 resource_missing: no payment intent ${paymentIntent}`);
    const live = this.refunds.filter((r) => r.paymentIntent === paymentIntent && r.status !== 'failed');
    const shown = new Set(live.map((r) => r.effectId));
    const sum = (refunds: readonly PaymentRefund[]) => refunds.reduce((total, r) => total + r.amountCents, 0);
    const reservedCents = reserved
      .filter((dispatched) => dispatched.effect_id !== exceptEffectId && !shown.has(dispatched.effect_id))
      .reduce((total, dispatched) => total + (effectAmountOf(dispatched.effect) ?? 0), 0);
    return {
      payment_intent: paymentIntent,
      currency: payment.currency,
      amount_received: payment.amountCents,
      refunded_by_others: sum(live.filter((r) => exceptEffectId === undefined || r.effectId !== exceptEffectId)) + reservedCents,
      refunded_outside: sum(live.filter((r) => r.effectId === null)),
      disputed: payment.disputed,
    };
  }

  /** StripeRefunds.explain, over the memory ledger and without I/O, so a simulator can judge at any instant. */
  judge(premises: Json, effectId: string, effect: JsonObject, options: ExplainOptions = {}): Explained {
    if (!isJsonObject(premises) || typeof premises.payment_intent !== 'string') {
      return { violations: ['the recorded facts name no payment intent'], changes: [], repairs: [] };
    }
    if (premises.payment_intent !== effect.payment_intent) {
      return { violations: ['the recorded facts are about another payment'], changes: [], repairs: [] };
    }
    const now = this.capture(premises.payment_intent, effectId, options.reserved);
    return judgeRefundFacts(premises, now, effectAmountOf(effect) ?? 0, options.headroom === true);
  }

  async explain(premises: Json, effectId: string, effect: JsonObject, options: ExplainOptions = {}): Promise<Explained> {
    return this.judge(premises, effectId, effect, options);
  }

  private record(paymentIntent: string, amountCents: number, effectId: string | null): PaymentRefund {
    const refund: PaymentRefund = { id: `re_${this.refunds.length + 1}`, paymentIntent, amountCents, effectId, status: 'pending', createdMs: this.wallClockMs() };
    this.refunds.push(refund);
    return refund;
  }
}
