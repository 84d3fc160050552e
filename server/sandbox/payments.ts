import { decideCard } from './customers.ts';
import { invalidRequest, missingInParam } from './errors.ts';
import type { FormObject } from './form.ts';
import { newId, randomChars } from './ids.ts';
import { type Read, readAmountCents, readBoolean, readMetadata, readString, rejectUnknown } from './params.ts';
import type { Ledger } from './refunds.ts';
import {
  type CardDetails,
  type ChargeRecord,
  type DisputeMove,
  type DisputeRecord,
  PAYMENT_METHODS,
  type PaymentIntentRecord,
  type PaymentMethodId,
  type SandboxRecord,
  type StripeFailure,
} from './types.ts';

/** A payment intent asked for through `POST /v1/payment_intents`. */
export interface PaymentIntentRequest {
  amountCents: number;
  currency: string;
  paymentMethod: PaymentMethodId | null;
  /** The customer it is for (checked to exist by the caller, which holds the ledger). */
  customerId: string | null;
  confirm: boolean;
  description: string | null;
  metadata: Record<string, string>;
}

/** Objects a payment step creates or changes, to be committed together. */
export type PaymentWrites = SandboxRecord[];

const CREATE_PARAMS = [
  'amount',
  'currency',
  'payment_method',
  'confirm',
  'customer',
  'description',
  'metadata',
  'payment_method_types',
  'automatic_payment_methods',
  'expand',
] as const;
const CONFIRM_PARAMS = ['payment_method', 'expand', 'return_url'] as const;

/** Check the parameters of `POST /v1/payment_intents`. */
export function readPaymentIntentRequest(params: FormObject): Read<PaymentIntentRequest> {
  const unknown = rejectUnknown(params, CREATE_PARAMS);
  if (unknown) return refuse(unknown);
  const amountCents = readAmountCents(params, 'amount');
  if (!amountCents.ok) return amountCents;
  if (amountCents.value === null)
    return refuse(invalidRequest('parameter_missing', 'Missing required param: amount.', 'amount'));
  const currency = readString(params, 'currency');
  if (!currency.ok) return currency;
  if (currency.value === null) {
    return refuse(invalidRequest('parameter_missing', 'Missing required param: currency.', 'currency'));
  }
  if (!/^[a-zA-Z]{3}$/.test(currency.value)) {
    return refuse(invalidRequest(null, `Invalid currency: ${currency.value}.`, 'currency'));
  }
  const paymentMethod = readPaymentMethod(params);
  if (!paymentMethod.ok) return paymentMethod;
  const customerId = readString(params, 'customer');
  if (!customerId.ok) return customerId;
  const confirm = readBoolean(params, 'confirm');
  if (!confirm.ok) return confirm;
  const description = readString(params, 'description');
  if (!description.ok) return description;
  const metadata = readMetadata(params);
  if (!metadata.ok) return metadata;
  return {
    ok: true,
    value: {
      amountCents: amountCents.value,
      currency: currency.value.toLowerCase(),
      paymentMethod: paymentMethod.value,
      customerId: customerId.value,
      confirm: confirm.value,
      description: description.value,
      metadata: metadata.value,
    },
  };
}

/** Create a payment intent, confirmed at once when asked (with `card` in place of the token's test card, for a demo). */
export function decidePaymentIntent(
  request: PaymentIntentRequest,
  nowMs: number,
  card: CardDetails | null = null,
): Read<PaymentWrites> {
  const id = newId('pi');
  const intent: PaymentIntentRecord = {
    kind: 'payment_intent',
    id,
    amountCents: request.amountCents,
    currency: request.currency,
    paymentMethod: request.paymentMethod,
    paymentMethodId: null,
    customerId: request.customerId,
    status: request.paymentMethod === null ? 'requires_payment_method' : 'requires_confirmation',
    latestChargeId: null,
    clientSecret: `${id}_secret_${randomChars(25)}`,
    description: request.description,
    metadata: request.metadata,
    createdMs: nowMs,
  };
  if (!request.confirm) return { ok: true, value: [intent] };
  return decideConfirm(intent, null, nowMs, card);
}

/** Check the parameters of `POST /v1/payment_intents/:id/confirm`. */
export function readConfirmRequest(params: FormObject): Read<PaymentMethodId | null> {
  const unknown = rejectUnknown(params, CONFIRM_PARAMS);
  if (unknown) return refuse(unknown);
  return readPaymentMethod(params);
}

/**
 * Confirm a payment intent: the test card always succeeds, so a card payment method and a charge
 * are created; with `pm_card_createDispute` a dispute opens on that charge straight away.
 */
export function decideConfirm(
  intent: PaymentIntentRecord,
  paymentMethod: PaymentMethodId | null,
  nowMs: number,
  card: CardDetails | null = null,
): Read<PaymentWrites> {
  if (intent.status === 'succeeded') {
    return refuse(
      invalidRequest(
        'payment_intent_unexpected_state',
        'You cannot confirm this PaymentIntent because it has already succeeded after being previously confirmed.',
      ),
    );
  }
  const method = paymentMethod ?? intent.paymentMethod;
  if (method === null) {
    return refuse(
      invalidRequest(
        'payment_intent_unexpected_state',
        "You cannot confirm this PaymentIntent because it's missing a payment method.",
        'payment_method',
      ),
    );
  }
  const customerId = intent.customerId ?? null;
  const madeCard = decideCard(method, card, customerId, nowMs);
  const charge: ChargeRecord = {
    kind: 'charge',
    id: newId('ch'),
    paymentIntentId: intent.id,
    amountCents: intent.amountCents,
    currency: intent.currency,
    paymentMethod: method,
    paymentMethodId: madeCard.id,
    customerId,
    createdMs: nowMs,
  };
  const confirmed: PaymentIntentRecord = {
    ...intent,
    paymentMethod: method,
    paymentMethodId: madeCard.id,
    status: 'succeeded',
    latestChargeId: charge.id,
  };
  const writes: PaymentWrites = [confirmed, madeCard, charge];
  if (method === 'pm_card_createDispute') writes.push(buildDispute(charge, 'fraudulent', nowMs));
  return { ok: true, value: writes };
}

/** Open a dispute on a payment intent's charge, as a cardholder's bank would. */
export function decideDispute(ledger: Ledger, paymentIntentId: string, nowMs: number): Read<DisputeRecord> {
  const intent = ledger.paymentIntents.get(paymentIntentId);
  if (intent === undefined) return refuse(missingInParam('payment_intent', paymentIntentId, 'payment_intent'));
  const charge = intent.latestChargeId === null ? undefined : ledger.charges.get(intent.latestChargeId);
  if (charge === undefined) {
    return refuse(
      invalidRequest(
        'payment_intent_unexpected_state',
        `PaymentIntent ${intent.id} has no charge to dispute.`,
        'payment_intent',
      ),
    );
  }
  if ([...ledger.disputes.values()].some((dispute) => dispute.chargeId === charge.id)) {
    return refuse(invalidRequest('charge_disputed', `Charge ${charge.id} is already disputed.`, 'payment_intent'));
  }
  return { ok: true, value: buildDispute(charge, 'general', nowMs) };
}

/**
 * Move an open dispute as the bank does: evidence submitted puts it `under_review`; `won` or
 * `lost` closes it. A closed dispute, or a move to where it already is, is refused.
 */
export function decideDisputeMove(dispute: DisputeRecord, move: DisputeMove): Read<DisputeRecord> {
  const status = dispute.status ?? 'needs_response';
  if (status === 'won' || status === 'lost') {
    return refuse(invalidRequest(null, `Dispute ${dispute.id} is already closed (${status}).`, 'status'));
  }
  if (status === move) return refuse(invalidRequest(null, `Dispute ${dispute.id} is already ${status}.`, 'status'));
  const evidenceSubmitted = move === 'under_review' || (dispute.evidenceSubmitted ?? false);
  return { ok: true, value: { ...dispute, status: move, evidenceSubmitted } };
}

function buildDispute(charge: ChargeRecord, reason: string, nowMs: number): DisputeRecord {
  return {
    kind: 'dispute',
    id: newId('dp'),
    chargeId: charge.id,
    paymentIntentId: charge.paymentIntentId,
    amountCents: charge.amountCents,
    currency: charge.currency,
    reason,
    status: 'needs_response',
    evidenceSubmitted: false,
    createdMs: nowMs,
  };
}

function readPaymentMethod(params: FormObject): Read<PaymentMethodId | null> {
  const read = readString(params, 'payment_method');
  if (!read.ok) return read;
  if (read.value === null) return { ok: true, value: null };
  const known = PAYMENT_METHODS.find((method) => method === read.value);
  if (known === undefined) return refuse(missingInParam('payment_method', read.value, 'payment_method'));
  return { ok: true, value: known };
}

function refuse<T>(failure: StripeFailure): Read<T> {
  return { ok: false, failure };
}
