import type { JsonObject } from '../../shared/json.ts';
import { limits } from '../../shared/limits.ts';
import { diffFacts, repairsThatFit } from '../gate/premises.ts';
import { type Explained, SimulatedCrash, type Target, type Tier } from '../gate/target.ts';

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
