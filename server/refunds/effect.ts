import type { Json, JsonObject } from '../../shared/json.ts';
import { isJsonObject } from '../../shared/json.ts';
import { limits } from '../../shared/limits.ts';

/**
 * A refund as Interlock sends it: the one value from an agent's request, through the journal's
 * PROPOSED and DISPATCHED entries, to Stripe's `refunds.create`. Journaled as JSON, read back
 * through `parseRefundEffect`, never field by field.
 */
export type RefundEffect = { payment_intent: string; amount: number };

/** The refund a request asks for: its payment and its amount, nothing else. */
export function refundEffectOf(request: { payment_intent?: Json; amount?: Json }): RefundEffect {
  return { payment_intent: String(request.payment_intent), amount: Number(request.amount) };
}

/** A journaled effect read back as the refund it names, or null when it names no payment and amount. */
export function parseRefundEffect(effect: Json | undefined): RefundEffect | null {
  if (!isJsonObject(effect)) return null;
  const { payment_intent, amount } = effect;
  return typeof payment_intent === 'string' && typeof amount === 'number' ? { payment_intent, amount } : null;
}

/**
 * The amount a journaled effect carries, in the currency's smallest unit, or null when it carries
 * none: for the readers (the ledger, the scoreboard, exports) that need the amount of an effect
 * whatever else it holds, read here beside the parser rather than field by field at each site.
 */
export function effectAmountOf(effect: Json | undefined): number | null {
  if (!isJsonObject(effect)) return null;
  return typeof effect.amount === 'number' ? effect.amount : null;
}

/** What is wrong with an effect a target is asked to send, by field; null when it is a refund it may send. */
export type RefundEffectFault = 'fields' | 'payment_intent' | 'amount';

/** The strict check a target makes before anything is written: exactly a payment intent id and a whole amount within bounds. */
export function refundEffectFault(effect: JsonObject): RefundEffectFault | null {
  if (Object.keys(effect).sort().join(',') !== 'amount,payment_intent') return 'fields';
  if (typeof effect.payment_intent !== 'string' || !/^pi_[A-Za-z0-9_]{1,100}$/.test(effect.payment_intent)) return 'payment_intent';
  const amount = effect.amount;
  if (typeof amount !== 'number' || !Number.isSafeInteger(amount) || amount <= 0 || amount > limits.refundCentsMax) return 'amount';
  return null;
}
