import Stripe from 'stripe';
import { isJsonObject, type Json, type JsonObject } from '../../shared/json.ts';
import { limits } from '../../shared/limits.ts';
import type { Dispatched } from '../../shared/entries.ts';
import { judgeRefundFacts } from '../gate/premises.ts';
import { type ExplainOptions, type Explained, type Target, TargetRejectedError } from '../gate/target.ts';

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


/** A live key was offered: Interlock only ever talks to Stripe test mode. */
export class LiveKeyError extends Error {
  readonly code = 'live_key_refused';
}

/** Where the SDK should connect: real Stripe, or the local sandbox. */
export interface StripeEndpoint {
  host?: string;
  port?: number;
  protocol?: 'http' | 'https';
}

/** A real `stripe` SDK client, refusing live keys, with no hidden retries (the gate owns retries). */
export function createStripeClient(apiKey: string, endpoint: StripeEndpoint = {}): Stripe {
  if (!/^(sk|rk)_test_[A-Za-z0-9_]+$/.test(apiKey)) {
    throw new LiveKeyError('only Stripe test-mode keys (sk_test_ or rk_test_) are accepted; live keys are refused');
  }
  return new Stripe(apiKey, {
    ...endpoint,
    maxNetworkRetries: 0,
    timeout: limits.stripeTimeoutMs,
    telemetry: false,
  });
}

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
    return typeof effect.payment_intent === 'string' ? effect.payment_intent : null;
  }

  invalidEffect(effect: JsonObject): string | null {
    const keys = Object.keys(effect).sort().join(',');
    if (keys !== 'amount,payment_intent') return 'a refund effect has exactly payment_intent and amount';
    if (typeof effect.payment_intent !== 'string' || !/^pi_[A-Za-z0-9_]{1,100}$/.test(effect.payment_intent)) {
      return 'payment_intent must be a Stripe payment intent id (pi_...)';
    }
    const amount = effect.amount;
    if (typeof amount !== 'number' || !Number.isSafeInteger(amount) || amount <= 0 || amount > limits.refundCentsMax) {
      return `amount must be a whole number in the smallest currency unit (cents for USD, whole yen for JPY), from 1 to ${limits.refundCentsMax}`;
    }
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
      if (error instanceof Stripe.errors.StripeError && error.statusCode !== undefined && DEFINITE_REJECTIONS.has(error.statusCode)) {
        throw new TargetRejectedError(`${error.statusCode} ${error.code ?? error.type}: ${error.message}`);
      }
      throw error;
    }
  }

  /** Every refund on a payment, in any status, newest first. */
  async listRefunds(paymentIntent: string): Promise<Stripe.Refund[]> {
    const all: Stripe.Refund[] = [];
    let startingAfter: string | undefined;
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
   */
  async capture(paymentIntent: string, exceptEffectId?: string, reserved: readonly Dispatched[] = []): Promise<PaymentFacts> {
    const [intent, refunds] = await Promise.all([this.stripe.paymentIntents.retrieve(paymentIntent), this.listRefunds(paymentIntent)]);
    const disputed = await this.chargeDisputed(intent);
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

  /**
   * Whether the payment's charge is disputed, read from the charge itself rather than from an
   * expanded field: a server that ignores `expand` must not turn an open dispute into `false`.
   * A charge that cannot be read throws (an unknown fact), it never reads as undisputed.
   */
  private async chargeDisputed(intent: Stripe.PaymentIntent): Promise<boolean> {
    const latest = intent.latest_charge;
    // Nothing was charged, so there is nothing to dispute.
    if (latest === null || latest === undefined) return false;
    const charge = typeof latest === 'string' ? await this.stripe.charges.retrieve(latest) : latest;
    if (typeof charge.disputed !== 'boolean') throw new Error(`charge ${charge.id} does not say whether it is disputed`);
    return charge.disputed;
  }

  async explain(premises: Json, effectId: string, effect: JsonObject, options: ExplainOptions = {}): Promise<Explained> {
    if (!isJsonObject(premises) || typeof premises.payment_intent !== 'string') {
      return { violations: ['the recorded facts name no payment intent'], changes: [], repairs: [] };
    }
    if (premises.payment_intent !== effect.payment_intent) {
      return { violations: ['the recorded facts are about another payment'], changes: [], repairs: [] };
    }
    const now = await this.capture(premises.payment_intent, effectId, options.reserved);
    return judgeRefundFacts(premises, now, refundOf(effect).amount, options.headroom === true);
  }
}

/**
 * The effect as the refund it names. The gate refuses, before anything is written, every effect
 * `invalidEffect` finds fault with, so one that names no payment or amount here is our bug: it is
 * refused as a definite "no", and nothing is sent for it.
 */
function refundOf(effect: JsonObject): { payment_intent: string; amount: number } {
  const { payment_intent, amount } = effect;
  if (typeof payment_intent !== 'string' || typeof amount !== 'number') {
    throw new TargetRejectedError('the effect is not a refund (payment_intent and amount); nothing was sent');
  }
  return { payment_intent, amount };
}

/** The amount of a dispatched refund effect, 0 when it names none (never from this target). */
function amountOf(effect: JsonObject): number {
  return typeof effect.amount === 'number' ? effect.amount : 0;
}
