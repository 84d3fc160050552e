import { invalidRequest, missingInParam } from './errors.ts';
import type { FormObject } from './form.ts';
import { newId } from './ids.ts';
import {
  type Read,
  readAmountCents,
  readEnum,
  readListLimit,
  readMetadata,
  readString,
  rejectUnknown,
} from './params.ts';
import {
  type ChargeRecord,
  type DisputeRecord,
  type PaymentIntentRecord,
  REFUND_REASONS,
  type RefundOrigin,
  type RefundReason,
  type RefundRecord,
  type RefundStatus,
  type SettleOutcome,
  type StripeFailure,
} from './types.ts';

/** What the refund decisions read: the sandbox's objects, never changed here. */
export interface Ledger {
  paymentIntents: ReadonlyMap<string, PaymentIntentRecord>;
  charges: ReadonlyMap<string, ChargeRecord>;
  refunds: ReadonlyMap<string, RefundRecord>;
  disputes: ReadonlyMap<string, DisputeRecord>;
  /** The refunds of one charge, in creation order. */
  refundsOfCharge(chargeId: string): RefundRecord[];
  /** The refunds of one payment intent, in creation order. */
  refundsOfPaymentIntent(paymentIntentId: string): RefundRecord[];
}

/** A refund asked for through `POST /v1/refunds` or by hand. */
export interface RefundRequest {
  paymentIntentId: string | null;
  chargeId: string | null;
  /** Null refunds what is left. */
  amountCents: number | null;
  metadata: Record<string, string>;
  reason: RefundReason | null;
}

/** The failure reason a refund gets when a test fails it without naming one. */
export const DEFAULT_FAILURE_REASON = 'declined';

const REFUND_PARAMS = ['payment_intent', 'charge', 'amount', 'metadata', 'reason', 'expand'] as const;
const LIST_PARAMS = ['payment_intent', 'charge', 'limit', 'starting_after', 'ending_before', 'expand'] as const;
/** `GET /v1/refunds` also takes Stripe's `created` filter. */
const REFUND_LIST_PARAMS = [...LIST_PARAMS, 'created'] as const;
/** The bounds `created[...]` may carry, in unix seconds, as Stripe names them. */
const CREATED_BOUNDS = ['gt', 'gte', 'lt', 'lte'] as const;

/** The amount refunded on a charge: every refund of it that has not failed. */
export function refundedCents(refunds: Iterable<RefundRecord>, chargeId: string): number {
  let totalCents = 0;
  for (const refund of refunds) {
    if (refund.chargeId === chargeId && refund.status !== 'failed') totalCents += refund.amountCents;
  }
  return totalCents;
}

/** Check the parameters of `POST /v1/refunds`; refusals here are validation and never saved. */
export function readRefundRequest(params: FormObject): Read<RefundRequest> {
  const unknown = rejectUnknown(params, REFUND_PARAMS);
  if (unknown) return refuse(unknown);
  const paymentIntentId = readString(params, 'payment_intent');
  if (!paymentIntentId.ok) return paymentIntentId;
  const chargeId = readString(params, 'charge');
  if (!chargeId.ok) return chargeId;
  if (paymentIntentId.value !== null && chargeId.value !== null) {
    return refuse(
      invalidRequest('parameters_exclusive', 'You may pass only one of charge or payment_intent.', 'charge'),
    );
  }
  if (paymentIntentId.value === null && chargeId.value === null) {
    return refuse(
      invalidRequest(
        'parameter_missing',
        'One of the following params should be provided for this request: payment_intent or charge.',
      ),
    );
  }
  const amountCents = readAmountCents(params, 'amount');
  if (!amountCents.ok) return amountCents;
  const metadata = readMetadata(params);
  if (!metadata.ok) return metadata;
  const reason = readEnum(params, 'reason', REFUND_REASONS);
  if (!reason.ok) return reason;
  return {
    ok: true,
    value: {
      paymentIntentId: paymentIntentId.value,
      chargeId: chargeId.value,
      amountCents: amountCents.value,
      metadata: metadata.value,
      reason: reason.value,
    },
  };
}

/** What a refund is created as: `pending` until it settles, or `succeeded` at once. */
export type CreatedRefundStatus = Extract<RefundStatus, 'pending' | 'succeeded'>;

/**
 * Decide a refund against the ledger. Guards run in Stripe's order: the object must exist, have
 * a charge, not be disputed, not be fully refunded, and the amount must fit what is left.
 */
export function decideRefund(
  ledger: Ledger,
  request: RefundRequest,
  origin: RefundOrigin,
  nowMs: number,
  createdAs: CreatedRefundStatus = 'pending',
): Read<RefundRecord> {
  const charge = findCharge(ledger, request);
  if (!charge.ok) return charge;
  const { id: chargeId, amountCents: chargedCents } = charge.value;
  if ([...ledger.disputes.values()].some((dispute) => dispute.chargeId === chargeId)) {
    return refuse(
      invalidRequest('charge_disputed', `Charge ${chargeId} has been charged back; cannot issue a refund.`),
    );
  }
  const leftCents = chargedCents - refundedCents(ledger.refundsOfCharge(chargeId), chargeId);
  if (leftCents <= 0) {
    return refuse(invalidRequest('charge_already_refunded', `Charge ${chargeId} has already been refunded.`));
  }
  const amountCents = request.amountCents ?? leftCents;
  if (amountCents > leftCents) {
    return refuse(
      invalidRequest(
        'amount_too_large',
        `Refund amount (${formatCents(amountCents)}) is greater than unrefunded amount on charge (${formatCents(leftCents)})`,
        'amount',
      ),
    );
  }
  return {
    ok: true,
    value: {
      kind: 'refund',
      id: newId('re'),
      amountCents,
      currency: charge.value.currency,
      chargeId,
      paymentIntentId: charge.value.paymentIntentId,
      status: createdAs,
      reason: request.reason,
      failureReason: null,
      metadata: request.metadata,
      origin,
      createdMs: nowMs,
    },
  };
}

/** Settle a pending refund: it succeeds, or fails with a reason and stops counting as refunded. */
export function decideSettlement(
  refund: RefundRecord,
  outcome: SettleOutcome,
  failureReason?: string,
): Read<RefundRecord> {
  if (refund.status !== 'pending') {
    return refuse(
      invalidRequest(null, `Refund ${refund.id} is ${refund.status}; only a pending refund settles.`, 'refund'),
    );
  }
  if (outcome === 'succeeded') return { ok: true, value: { ...refund, status: 'succeeded' } };
  return {
    ok: true,
    value: { ...refund, status: 'failed', failureReason: failureReason ?? DEFAULT_FAILURE_REASON },
  };
}

/** Filters and cursor of `GET /v1/refunds` and `GET /v1/disputes`. */
export interface ListQuery {
  paymentIntentId: string | null;
  chargeId: string | null;
  limit: number;
  startingAfter: string | null;
  endingBefore: string | null;
}

/** Stripe's `created` filter on a list, in unix seconds: `created=<t>` is `gte` and `lte` both at t. */
export type CreatedRange = Partial<Record<(typeof CREATED_BOUNDS)[number], number>>;

/** Filters and cursor of `GET /v1/refunds`: a list query and the `created` range. */
export interface RefundListQuery extends ListQuery {
  created: CreatedRange;
}

/** Check the query of `GET /v1/refunds`: a list query, plus `created` as Stripe takes it. */
export function readRefundListQuery(params: FormObject): Read<RefundListQuery> {
  const unknown = rejectUnknown(params, REFUND_LIST_PARAMS);
  if (unknown) return refuse(unknown);
  const { created, ...rest } = params;
  const query = readListQuery(rest);
  if (!query.ok) return query;
  const range = readCreated(created);
  if (!range.ok) return range;
  return { ok: true, value: { ...query.value, created: range.value } };
}

/** `created=<t>`, or `created[gt|gte|lt|lte]=<t>`: whole unix seconds. */
function readCreated(value: FormObject[string] | undefined): Read<CreatedRange> {
  if (value === undefined || value === '') return { ok: true, value: {} };
  if (typeof value === 'string') {
    const at = readUnixSeconds(value, 'created');
    return at.ok ? { ok: true, value: { gte: at.value, lte: at.value } } : at;
  }
  if (Array.isArray(value)) return refuse(invalidRequest(null, 'Invalid created: must be an integer or a hash of gt, gte, lt, lte.', 'created'));
  const range: CreatedRange = {};
  for (const [bound, item] of Object.entries(value)) {
    const name = `created[${bound}]`;
    const known = CREATED_BOUNDS.find((b) => b === bound);
    if (known === undefined) return refuse(invalidRequest('parameter_unknown', `Received unknown parameter: ${name}`, name));
    if (typeof item !== 'string') return refuse(invalidRequest('parameter_invalid_integer', `Invalid integer: ${name}`, name));
    const at = readUnixSeconds(item, name);
    if (!at.ok) return at;
    range[known] = at.value;
  }
  return { ok: true, value: range };
}

function readUnixSeconds(text: string, name: string): Read<number> {
  const trimmed = text.trim();
  if (!/^\d{1,12}$/.test(trimmed)) return refuse(invalidRequest('parameter_invalid_integer', `Invalid integer: ${text}`, name));
  return { ok: true, value: Number(trimmed) };
}

/** True when a refund made at `createdMs` lies in the range, compared in whole seconds as Stripe's `created` is. */
function createdWithin(createdMs: number, range: CreatedRange): boolean {
  const s = Math.floor(createdMs / 1000);
  return (
    (range.gt === undefined || s > range.gt) &&
    (range.gte === undefined || s >= range.gte) &&
    (range.lt === undefined || s < range.lt) &&
    (range.lte === undefined || s <= range.lte)
  );
}

/** Check the query of a list (`GET /v1/disputes`; `GET /v1/refunds` adds `created`). */
export function readListQuery(params: FormObject): Read<ListQuery> {
  const unknown = rejectUnknown(params, LIST_PARAMS);
  if (unknown) return refuse(unknown);
  const limit = readListLimit(params);
  if (!limit.ok) return limit;
  const strings: Record<string, string | null> = {};
  for (const name of ['payment_intent', 'charge', 'starting_after', 'ending_before']) {
    const read = readString(params, name);
    if (!read.ok) return read;
    strings[name] = read.value;
  }
  return {
    ok: true,
    value: {
      paymentIntentId: strings['payment_intent'] ?? null,
      chargeId: strings['charge'] ?? null,
      limit: limit.value,
      startingAfter: strings['starting_after'] ?? null,
      endingBefore: strings['ending_before'] ?? null,
    },
  };
}

/** One page of refunds, newest first, as Stripe lists them; the cursors page within the filtered list. */
export function listRefunds(ledger: Ledger, query: RefundListQuery): Read<{ data: RefundRecord[]; hasMore: boolean }> {
  const missing = missingFilter(ledger, query);
  if (missing) return refuse(missing);
  // Listing one payment's refunds reads that payment's refunds only, however many others there are.
  const candidates = query.paymentIntentId === null ? [...ledger.refunds.values()] : ledger.refundsOfPaymentIntent(query.paymentIntentId);
  const newestFirst = candidates
    .filter((refund) => query.chargeId === null || refund.chargeId === query.chargeId)
    .filter((refund) => createdWithin(refund.createdMs, query.created))
    .reverse();
  return pageOf(newestFirst, query, 'refund');
}

/** Cut a newest-first list at Stripe's cursors; a cursor naming no `what` in the list is refused as missing. */
export function pageOf<T extends { id: string }>(
  newestFirst: T[],
  query: { limit: number; startingAfter: string | null; endingBefore: string | null },
  what: string,
): Read<{ data: T[]; hasMore: boolean }> {
  if (query.startingAfter !== null) {
    const at = newestFirst.findIndex((item) => item.id === query.startingAfter);
    if (at === -1) return refuse(missingInParam(what, query.startingAfter, 'starting_after'));
    const rest = newestFirst.slice(at + 1);
    return { ok: true, value: { data: rest.slice(0, query.limit), hasMore: rest.length > query.limit } };
  }
  if (query.endingBefore !== null) {
    const at = newestFirst.findIndex((item) => item.id === query.endingBefore);
    if (at === -1) return refuse(missingInParam(what, query.endingBefore, 'ending_before'));
    const before = newestFirst.slice(0, at);
    const start = Math.max(0, before.length - query.limit);
    return { ok: true, value: { data: before.slice(start), hasMore: start > 0 } };
  }
  return { ok: true, value: { data: newestFirst.slice(0, query.limit), hasMore: newestFirst.length > query.limit } };
}

/** A list filtered by a payment intent or charge that does not exist is refused, as Stripe refuses it. */
export function missingFilter(ledger: Ledger, query: ListQuery): StripeFailure | null {
  if (query.paymentIntentId !== null && !ledger.paymentIntents.has(query.paymentIntentId)) {
    return missingInParam('payment_intent', query.paymentIntentId, 'payment_intent');
  }
  if (query.chargeId !== null && !ledger.charges.has(query.chargeId)) return missingInParam('charge', query.chargeId, 'charge');
  return null;
}

function findCharge(ledger: Ledger, request: RefundRequest): Read<ChargeRecord> {
  if (request.chargeId !== null) {
    const charge = ledger.charges.get(request.chargeId);
    if (charge === undefined) return refuse(missingInParam('charge', request.chargeId, 'charge'));
    return { ok: true, value: charge };
  }
  const paymentIntentId = request.paymentIntentId ?? '';
  const intent = ledger.paymentIntents.get(paymentIntentId);
  if (intent === undefined) return refuse(missingInParam('payment_intent', paymentIntentId, 'payment_intent'));
  const charge = intent.latestChargeId === null ? undefined : ledger.charges.get(intent.latestChargeId);
  if (intent.status !== 'succeeded' || charge === undefined) {
    return refuse(
      invalidRequest(
        'payment_intent_unexpected_state',
        `This PaymentIntent (${intent.id}) does not have a successful charge to refund.`,
        'payment_intent',
      ),
    );
  }
  return { ok: true, value: charge };
}

function formatCents(cents: number): string {
  return `$${(cents / 100).toFixed(2)}`;
}

function refuse<T>(failure: StripeFailure): Read<T> {
  return { ok: false, failure };
}
