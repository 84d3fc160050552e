import Stripe from 'stripe';
import { isJsonObject, type Json, type JsonObject } from '../../shared/json.ts';
import { limits } from '../../shared/limits.ts';
import { parseRefundEffect, type RefundEffect, refundEffectFault } from '../refunds/effect.ts';
import type { PaymentCustomer } from '../../shared/api.ts';
import type { Dispatched } from '../../shared/entries.ts';
import { isRefundFacts, judgeRefundFacts } from '../gate/premises.ts';
import { type ExplainOptions, type Explained, type SendTurn, type Target, TargetBusyError, TargetRejectedError, TargetRetryableError } from '../gate/target.ts';
import type { BudgetClass } from '../stripe/budget.ts';
import { budgetOf, CREATE_REFUND, heldGrantCovers, READ_PAYMENT, releaseHeldGrant, withStripeClass } from '../stripe/paced-client.ts';

/** The metadata key that ties a Stripe refund to the effect that sent it. */
export const EFFECT_METADATA_KEY = 'interlock_effect_id';

/** HTTP statuses where Stripe answered and definitely did nothing; every other failure is an unknown outcome. */
const DEFINITE_REJECTIONS: ReadonlySet<number> = new Set([400, 402, 404]);

/** Pages of refunds read for one payment intent: 100 per page, far beyond any real payment. */
const REFUND_PAGES_MAX = 10;

/**
 * The facts a refund decision relies on, read from Stripe and the journal. `refunded_by_others`
 * counts every refund that did not fail, plus the refunds Interlock has dispatched on the payment
 * and Stripe does not show yet (open dispatches count as already refunded); `refunded_outside` is
 * the part made outside Interlock (the dashboard, another system), which no rule may overlook.
 */
export interface PaymentFacts extends JsonObject {
  payment_intent: string;
  currency: string;
  amount_received: number;
  refunded_by_others: number;
  refunded_outside: number;
  disputed: boolean;
}

/** One read of a payment: the intent, its latest charge (null before any), whether that is disputed, and every refund on it. */
export interface PaymentRead {
  intent: Stripe.PaymentIntent;
  charge: Stripe.Charge | null;
  disputed: boolean;
  refunds: Stripe.Refund[];
}

/**
 * The facts of a read: what others refunded (failed refunds returned nothing) or have
 * dispatched, and whether a dispute is open. `reserved` are the open dispatches on the payment,
 * read from the journal before the read: each counts as refunded until Stripe shows its refund.
 */
function factsOf(paymentIntent: string, read: PaymentRead, exceptEffectId: string | undefined, reserved: readonly Dispatched[]): PaymentFacts {
  const { intent, disputed, refunds } = read;
  const live = refunds.filter((r) => r.status !== 'failed' && r.status !== 'canceled');
  const sentBy = (r: Stripe.Refund) => r.metadata?.[EFFECT_METADATA_KEY];
  const shown = new Set(live.map(sentBy));
  const refundedCents = live.filter((r) => exceptEffectId === undefined || sentBy(r) !== exceptEffectId).reduce((sum, r) => sum + r.amount, 0);
  const reservedCents = reserved
    .filter((dispatched) => dispatched.effect_id !== exceptEffectId && !shown.has(dispatched.effect_id))
    .reduce((sum, dispatched) => sum + amountOf(dispatched.effect), 0);
  return {
    payment_intent: paymentIntent,
    currency: intent.currency,
    amount_received: intent.amount_received,
    refunded_by_others: refundedCents + reservedCents,
    refunded_outside: live.filter((r) => sentBy(r) === undefined).reduce((sum, r) => sum + r.amount, 0),
    disputed,
  };
}

/** Who paid, as a charge's billing details name them (Stripe always sends them, each part nullable); null when they name no one. */
export function billedCustomerOf(charge: Stripe.Charge): PaymentCustomer | null {
  const name = charge.billing_details?.name?.trim() || null;
  const email = charge.billing_details?.email?.trim() || null;
  return name === null && email === null ? null : { name, email };
}

export { createStripeClient, LiveKeyError, type StripeEndpoint } from '../stripe/client.ts';

/**
 * Stripe refunds as a tier-1 target: the effect id is the idempotency key and sits in the
 * refund's metadata, so a refund can be found again by listing the payment's refunds.
 */
export class StripeRefunds implements Target {
  readonly tier = 1 as const;
  readonly queryable = true;
  readonly dedupWindowMs = limits.stripeKeyWindowMs;

  constructor(readonly stripe: Stripe) {}

  /** An open dispatch of a refund reserves its payment. */
  reservationKey(effect: JsonObject): string | null {
    return parseRefundEffect(effect)?.payment_intent ?? null;
  }

  invalidEffect(effect: JsonObject): string | null {
    const fault = refundEffectFault(effect);
    if (fault === 'fields') return 'a refund effect has exactly payment_intent and amount';
    if (fault === 'payment_intent') return 'payment_intent must be a Stripe payment intent id (pi_...)';
    if (fault === 'amount') return `amount must be a whole number in the smallest currency unit (cents for USD, whole yen for JPY), from 1 to ${limits.refundCentsMax}`;
    return null;
  }

  async apply(effectId: string, effect: JsonObject): Promise<JsonObject> {
    const { payment_intent, amount } = refundOf(effect);
    try {
      const refund = await this.stripe.refunds.create(
        {
          payment_intent,
          amount,
          metadata: { [EFFECT_METADATA_KEY]: effectId },
        },
        { idempotencyKey: effectId },
      );
      const replayed = refund.lastResponse.headers['idempotent-replayed'] === 'true';
      return { status: replayed ? 'already_processed' : 'ok', refund: refund.id, amount: refund.amount };
    } catch (error) {
      if (!(error instanceof Stripe.errors.StripeError)) throw error;
      const said = `${error.statusCode} ${error.code ?? error.type}: ${error.message}`;
      // 429 (rate_limit, lock_timeout) comes before the endpoint runs: nothing done, nothing kept under the key.
      if (error.statusCode === 429) throw new TargetBusyError(said);
      if (error.statusCode !== undefined && DEFINITE_REJECTIONS.has(error.statusCode)) throw new TargetRejectedError(said);
      if (error.headers?.['stripe-should-retry'] === 'true') throw new TargetRetryableError(said);
      throw error;
    }
  }

  /** Every refund on a payment, in any status, newest first (after the refund `after`, when given). */
  async listRefunds(paymentIntent: string, after?: string): Promise<Stripe.Refund[]> {
    const all: Stripe.Refund[] = [];
    let startingAfter: string | undefined = after;
    for (let page = 0; page < REFUND_PAGES_MAX; page++) {
      const list = await this.stripe.refunds.list({
        payment_intent: paymentIntent,
        limit: limits.stripeListLimit,
        ...(startingAfter ? { starting_after: startingAfter } : {}),
      });
      all.push(...list.data);
      if (!list.has_more || list.data.length === 0) return all;
      startingAfter = list.data.at(-1)!.id;
    }
    throw new Error(`more than ${REFUND_PAGES_MAX * limits.stripeListLimit} refunds on ${paymentIntent}`);
  }

  /**
   * The refund this effect sent, in any status. A refund Stripe later failed still counts: it was
   * sent, and sending another under the same decision would be a second refund.
   */
  async query(effectId: string, effect: JsonObject): Promise<Json> {
    const refunds = await this.listRefunds(refundOf(effect).payment_intent);
    return refunds.find((r) => r.metadata?.[EFFECT_METADATA_KEY] === effectId)?.id ?? null;
  }

  /**
   * The facts now: what others refunded (failed refunds returned nothing) or have dispatched, and
   * whether a dispute is open. `reserved` are the open dispatches on the payment, read from the
   * journal before this call: each counts as refunded until Stripe shows its refund.
   * One Stripe call in the usual case: the payment with its charge and the charge's refunds
   * expanded (`readPayment`).
   */
  async capture(paymentIntent: string, exceptEffectId?: string, reserved: readonly Dispatched[] = []): Promise<PaymentFacts> {
    return factsOf(paymentIntent, await this.readPayment(paymentIntent), exceptEffectId, reserved);
  }

  /**
   * `capture`, and who paid as the charge's billing details name them, from the same read: for
   * the display only. The customer never joins the facts, which are journaled and decided on.
   */
  async captureForDisplay(paymentIntent: string, exceptEffectId?: string, reserved: readonly Dispatched[] = []): Promise<{ facts: PaymentFacts; customer: PaymentCustomer | null }> {
    const read = await this.readPayment(paymentIntent);
    return { facts: factsOf(paymentIntent, read, exceptEffectId, reserved), customer: read.charge === null ? null : billedCustomerOf(read.charge) };
  }

  /**
   * The payment, whether its charge is disputed, and every refund on it, from one read: the
   * PaymentIntent with `expand[]=latest_charge.refunds` (the dispute flag is on the charge). An
   * expanded list holds its first refunds only, so a list that says `has_more` is paged on. A
   * Stripe that ignores `expand` (an id where an object was asked for) is read the long way, the
   * charge and the refunds apart, so an open dispute never reads as `false` and no refund is missed.
   */
  async readPayment(paymentIntent: string): Promise<PaymentRead> {
    const intent = await this.stripe.paymentIntents.retrieve(paymentIntent, { expand: ['latest_charge.refunds'] });
    const latest = intent.latest_charge;
    // Nothing was charged, so there is nothing to dispute or to have refunded.
    if (latest === null || latest === undefined) return { intent, charge: null, disputed: false, refunds: [] };
    if (typeof latest === 'string') {
      const [charge, refunds] = await Promise.all([this.stripe.charges.retrieve(latest), this.listRefunds(paymentIntent)]);
      return { intent, charge, disputed: disputedOf(charge), refunds };
    }
    const base = { intent, charge: latest, disputed: disputedOf(latest) };
    const expanded = latest.refunds;
    if (expanded === null || expanded === undefined || !Array.isArray(expanded.data)) {
      return { ...base, refunds: await this.listRefunds(paymentIntent) };
    }
    if (!expanded.has_more) return { ...base, refunds: expanded.data };
    const last = expanded.data.at(-1);
    return { ...base, refunds: [...expanded.data, ...(await this.listRefunds(paymentIntent, last?.id))] };
  }

  async explain(premises: Json, effectId: string, effect: JsonObject, options: ExplainOptions = {}): Promise<Explained> {
    const recorded = judgeable(premises, effect);
    if ('wrong' in recorded) return recorded.wrong;
    const now = await this.capture(recorded.paymentIntent, effectId, options.reserved);
    return judgeRefundFacts(recorded.premises, now, refundOf(effect).amount, options.headroom === true);
  }

  /** `explain` on facts already read (`now`, captured as `capture` does): no call to Stripe. */
  judgeOn(premises: Json, now: JsonObject, effect: JsonObject, options: ExplainOptions = {}): Explained {
    const recorded = judgeable(premises, effect);
    if ('wrong' in recorded) return recorded.wrong;
    const read = judgeable(now, effect);
    if ('wrong' in read) return read.wrong;
    if (!isRefundFacts(now)) return { violations: ['the facts read before the send are not a payment’s facts'], changes: [], repairs: [] };
    return judgeRefundFacts(recorded.premises, now, refundOf(effect).amount, options.headroom === true);
  }

  /**
   * A send's read and create, taken from the Stripe budget together before the read; a grant held
   * around the send that still has both (a routine request's, taken before its facts were read) is
   * used instead.
   */
  async sendTurn(): Promise<SendTurn> {
    return takeTurn(this.stripe, 'send');
  }

  yieldHeld(): void {
    releaseHeldGrant();
  }

  recoveryTurn<T>(work: () => Promise<T>): Promise<T> {
    return withStripeClass('recovery', work);
  }
}

/**
 * The effect as the refund it names. The gate refuses, before anything is written, every effect
 * `invalidEffect` finds fault with, so one that names no payment or amount here is our bug: it is
 * refused as a definite "no", and nothing is sent for it.
 */
function refundOf(effect: JsonObject): RefundEffect {
  const refund = parseRefundEffect(effect);
  if (refund === null) throw new TargetRejectedError('the effect is not a refund (payment_intent and amount); nothing was sent');
  return refund;
}

/** Facts that can be judged against this effect's payment, or why they cannot, as an explanation. */
function judgeable(premises: Json, effect: JsonObject): { premises: JsonObject; paymentIntent: string } | { wrong: Explained } {
  if (!isJsonObject(premises) || typeof premises.payment_intent !== 'string') {
    return { wrong: { violations: ['the recorded facts name no payment intent'], changes: [], repairs: [] } };
  }
  if (premises.payment_intent !== parseRefundEffect(effect)?.payment_intent) {
    return { wrong: { violations: ['the recorded facts are about another payment'], changes: [], repairs: [] } };
  }
  return { premises, paymentIntent: premises.payment_intent };
}

/**
 * A read of the payment and a refund create granted together as `klass` (a grant held around the
 * caller that still has the create is used instead): work run with it uses it, and what it did not
 * use is given back on release.
 */
export async function takeTurn(stripe: Stripe, klass: BudgetClass): Promise<SendTurn> {
  const budget = budgetOf(stripe);
  if (budget === null || heldGrantCovers([CREATE_REFUND])) return { run: (work) => withStripeClass(klass, work), release: () => {} };
  const grant = await budget.take(klass, [READ_PAYMENT, CREATE_REFUND]);
  return { run: (work) => withStripeClass(klass, work, grant), release: () => grant.release() };
}

/**
 * Whether a charge is disputed, read from the charge itself: a charge that does not say throws (an
 * unknown fact), it never reads as undisputed.
 */
function disputedOf(charge: Stripe.Charge): boolean {
  if (typeof charge.disputed !== 'boolean') throw new Error(`charge ${charge.id} does not say whether it is disputed`);
  return charge.disputed;
}

/** The amount of a dispatched refund effect, 0 when it names none (never from this target). */
function amountOf(effect: JsonObject): number {
  return parseRefundEffect(effect)?.amount ?? 0;
}
