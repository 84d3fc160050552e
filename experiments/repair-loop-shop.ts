import type { JsonObject } from '../shared/json.ts';
import { diffFacts, renderChange } from '../server/gate/premises.ts';
import type { Explained, Target } from '../server/gate/target.ts';

/**
 * The shop of repair_loop (inbox §21): no dedup, refunds can be looked up by reference. Money is
 * whole dollars, as in the script. Each order has a support case that approves $20 in total.
 */

/** Dollars each order's case approves in total. */
export const CASE_DOLLARS = 20;

/** An order as the agent reads it. */
export interface OrderRead extends JsonObject {
  order_id: string;
  refunded_total: number;
}

/** The approval the system of record holds for an order's case: what is left of the $20. */
export interface CaseApproval extends JsonObject {
  id: string;
  match: { order_id: string };
  max: { amount: number };
}

/** The shop died after the refund landed and before it answered: the outcome is unknown to the caller. */
export class ShopCrash extends Error {
  override readonly name = 'ShopCrash';
}

interface ShopOrder {
  /** A refund support is making by hand; it lands on the second read or on the refund call, whichever first. */
  handDollars: number;
  reads: number;
  crashOnce: boolean;
  refunds: { reference: string; amount: number }[];
}

/** The shop's side: orders, reads, refunds and lookups. */
export class Shop {
  readonly #orders = new Map<string, ShopOrder>();
  #references = 0;

  addOrder(order: string, options: { handDollars?: number; crashOnce?: boolean } = {}): void {
    this.#orders.set(order, { handDollars: options.handDollars ?? 0, reads: 0, crashOnce: options.crashOnce ?? false, refunds: [] });
  }

  #order(order: string): ShopOrder {
    const found = this.#orders.get(order);
    if (!found) throw new Error(`no order ${order}`);
    return found;
  }

  #landHandRefund(o: ShopOrder): void {
    if (o.handDollars <= 0) return;
    o.refunds.push({ reference: 'support-by-hand', amount: o.handDollars });
    o.handDollars = 0;
  }

  /** Everything refunded on the order, hand refunds included; not a read (no hand refund lands). */
  total(order: string): number {
    return this.#order(order).refunds.reduce((sum, r) => sum + r.amount, 0);
  }

  /** A read of the order, as the agent or a premise check makes it. */
  getOrder(order: string): OrderRead {
    const o = this.#order(order);
    o.reads += 1;
    if (o.reads >= 2) this.#landHandRefund(o);
    return { order_id: order, refunded_total: this.total(order) };
  }

  /** The case approval: the order, and at most what is left of the case's $20. */
  getApproval(order: string): CaseApproval {
    return { id: `case-${order}`, match: { order_id: order }, max: { amount: CASE_DOLLARS - this.total(order) } };
  }

  /** Refund with no dedup. A crash order records the refund, then dies once before answering. */
  refund(order: string, amount: number, reference = this.freshReference()): { refund: string } {
    const o = this.#order(order);
    this.#landHandRefund(o);
    o.refunds.push({ reference, amount });
    if (o.crashOnce) {
      o.crashOnce = false;
      throw new ShopCrash(`the shop died after refunding ${order}`);
    }
    return { refund: reference };
  }

  /** The refund made under a reference, if any. */
  lookup(reference: string): { order: string; amount: number } | null {
    for (const [order, o] of this.#orders) {
      const found = o.refunds.find((r) => r.reference === reference);
      if (found) return { order, amount: found.amount };
    }
    return null;
  }

  freshReference(): string {
    this.#references += 1;
    return `ref-${this.#references}`;
  }
}

/**
 * The shop as a gate target: tier 2 (no dedup, lookup by reference = effect id). The premises
 * are the order as the agent read it; the check reads the order again and names what changed.
 */
export class ShopTarget implements Target {
  readonly tier = 2;
  readonly queryable = true;
  readonly dedupWindowMs = null;

  constructor(readonly shop: Shop) {}

  invalidEffect(effect: JsonObject): string | null {
    if (typeof effect.order_id !== 'string') return 'order_id must be a string';
    if (!Number.isSafeInteger(effect.amount) || (effect.amount as number) <= 0) return 'amount must be a positive whole number of dollars';
    return null;
  }

  async apply(effectId: string, effect: JsonObject): Promise<JsonObject> {
    return this.shop.refund(effect.order_id as string, effect.amount as number, effectId);
  }

  async query(effectId: string): Promise<JsonObject | null> {
    return this.shop.lookup(effectId);
  }

  async explain(premises: unknown, _effectId: string, effect: JsonObject): Promise<Explained> {
    const now = this.shop.getOrder(effect.order_id as string);
    const changes = diffFacts(premises as JsonObject, now);
    return { violations: changes.map(renderChange), changes, repairs: [] };
  }
}
