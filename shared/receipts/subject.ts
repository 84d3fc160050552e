import { isJsonObject, type Json, type JsonObject } from '../json.ts';
import { sentRefund } from './report.ts';

// What a receipt is about, read from its entries: which request, which payment, how much and in
// which currency. The verifier's report says whether the claims hold; this says what they are
// claims about, so a page can state what a valid receipt proves. It proves nothing by itself:
// read it only from a receipt that verified.

/** The request and the refund a receipt's entries name; each part null when the entries do not record it. */
export type ReceiptSubject = {
  /** The agent's request id, bound at the first PROPOSED. */
  request_id: string | null;
  /** The agent that asked. */
  agent: string | null;
  /** The Stripe payment the refund is of. */
  payment_intent: string | null;
  /** The amount asked for, in the smallest unit of `currency`. */
  amount_minor: number | null;
  /** The payment's currency, as the facts at the proposal read it (lowercase ISO code). */
  currency: string | null;
  /** The amount the last send carried, in the smallest unit of `currency`; null when nothing was sent. */
  sent_amount_minor: number | null;
  /** Stripe's refund id, once a send committed. */
  refund: string | null;
};

const text = (value: Json | undefined): string | null => (typeof value === 'string' && value !== '' ? value : null);
const whole = (value: Json | undefined): number | null => (typeof value === 'number' && Number.isSafeInteger(value) ? value : null);
const objectOr = (value: Json | undefined): JsonObject => (isJsonObject(value) ? value : {});

/** The subject of a receipt's entries (a receipt's `entries`, as verified): its first PROPOSED, its last send, its commit. */
export function receiptSubject(entries: readonly JsonObject[]): ReceiptSubject {
  const proposed = entries.find((entry) => entry.kind === 'PROPOSED') ?? {};
  const request = objectOr(proposed.request);
  const effect = objectOr(proposed.effect);
  const premises = objectOr(proposed.premises);
  const sent = entries.findLast((entry) => entry.kind === 'DISPATCHED');
  const currency = text(premises.currency) ?? text(request.currency);
  return {
    request_id: text(request.id),
    agent: text(request.agent),
    payment_intent: text(request.payment_intent) ?? text(effect.payment_intent),
    amount_minor: whole(request.amount) ?? whole(effect.amount),
    currency: currency === null ? null : currency.toLowerCase(),
    sent_amount_minor: sent === undefined ? null : whole(objectOr(sent.effect).amount),
    refund: sentRefund(entries),
  };
}
