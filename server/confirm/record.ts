import type { Entry, FieldsOf } from '../../shared/entries.ts';
import { isJsonObject, type Json } from '../../shared/json.ts';
import { limits } from '../../shared/limits.ts';
import { parseRefundEffect } from '../refunds/effect.ts';
import { assertNever } from '../../shared/statuses.ts';
import { lastOf } from '../journal/chain.ts';
import type { JournalStore } from '../journal/store.ts';
import { finalStatus, statusRank } from '../journal/confirmations.ts';
import { sentRefund } from '../receipts/receipts.ts';
import { EFFECT_METADATA_KEY } from '../targets/stripe-refunds.ts';
import type { StripeEventLike } from './signature.ts';

// Confirmations (core §8.2, §8.3): what Stripe later says about a refund we sent, recorded as
// CONFIRMED on the effect's chain. A confirmation is informational: it never closes a dispatch,
// and nothing in the gate or the inbox reads it to decide anything.

/** What recording one confirmation can come to. */
export const RECORD_RESULTS = ['CONFIRMED', 'DUPLICATE_IGNORED', 'IGNORED:out_of_order', 'REFUSED:mismatch'] as const;
/** One recording result. */
export type RecordResult = (typeof RECORD_RESULTS)[number];

/** What a verified webhook event can come to: recorded, or one of the reasons it was not. */
export const CONFIRM_EVENT_RESULTS = [...RECORD_RESULTS, 'IGNORED:type', 'IGNORED:unknown_effect'] as const;
/** One webhook event result. */
export type ConfirmEventResult = (typeof CONFIRM_EVENT_RESULTS)[number];

/** Why a confirmation is not appended, checked inside the journal's write lock (core §8.3). */
export const CONFIRMATION_BLOCKERS = ['mismatch', 'duplicate', 'out_of_order'] as const;
/** One confirmation blocker. */
export type ConfirmationBlocker = (typeof CONFIRMATION_BLOCKERS)[number];

/**
 * Event types that confirm a refund. `charge.refunded` is left out on purpose: it carries the
 * charge, not the refund and its metadata, so it cannot be tied to an effect.
 */
export const CONFIRMING_EVENT_TYPES = ['refund.created', 'refund.updated', 'refund.failed'] as const;
/** One confirming event type. */
export type ConfirmingEventType = (typeof CONFIRMING_EVENT_TYPES)[number];

/** How a confirmation reached us: pushed by a webhook, or pulled by listing the payment's refunds. */
export const CONFIRMATION_VIAS = ['webhook', 'lookup'] as const;
/** One way a confirmation arrives. */
export type ConfirmationVia = (typeof CONFIRMATION_VIAS)[number];

/** The facts of a Stripe refund a confirmation records and checks. */
export interface RefundFacts {
  id: string;
  amount: number;
  payment_intent: string;
  status: string;
}

/** Where a confirmation came from: the event id for a webhook (null for a lookup) and Stripe's `created`, unix seconds. */
export interface ConfirmationSource {
  via: ConfirmationVia;
  event: string | null;
  created: number | null;
}

const effectIdPattern = new RegExp(`^[0-9a-f]{${limits.effectIdHexChars}}$`);

/** The facts of a Stripe refund object, or null when it lacks one of them (then it cannot match what was sent). */
export function readRefund(value: unknown): RefundFacts | null {
  if (!isJsonObject(value)) return null;
  const { id, amount, status, payment_intent: intent } = value;
  // A payment intent may come expanded into an object; its id is what the refund was made on.
  const paymentIntent = isJsonObject(intent) ? intent.id : intent;
  if (typeof id !== 'string' || typeof paymentIntent !== 'string' || typeof status !== 'string') return null;
  if (typeof amount !== 'number' || !Number.isSafeInteger(amount)) return null;
  return { id, amount, payment_intent: paymentIntent, status };
}

/** The effect id a refund object names in its metadata, or null when it names none that could be ours. */
export function refundEffectId(value: unknown): string | null {
  if (!isJsonObject(value) || !isJsonObject(value.metadata)) return null;
  const effectId = value.metadata[EFFECT_METADATA_KEY];
  return typeof effectId === 'string' && effectIdPattern.test(effectId) ? effectId : null;
}

/** The refund object of a verified event (`data.object`), or undefined. */
function eventObject(event: StripeEventLike): unknown {
  return isJsonObject(event.data) ? event.data.object : undefined;
}

/** The effect id a verified event is about, or null. */
export function eventEffectId(event: StripeEventLike): string | null {
  return refundEffectId(eventObject(event));
}

/**
 * Why this refund may not be recorded on this chain, or null when it may (core §8.3, first hit
 * wins): it must be the refund that was sent (amount, payment intent, and the refund id the
 * commit recorded); a replayed event is a duplicate; a status below the one that stands is out
 * of order; the status already recorded last is a duplicate. A never-dispatched effect is a mismatch.
 */
export function confirmationBlocker(chain: readonly Entry[], refund: RefundFacts, eventId: string | null): ConfirmationBlocker | null {
  const effect = parseRefundEffect(lastOf(chain, 'DISPATCHED')?.effect);
  if (effect === null || effect.amount !== refund.amount || effect.payment_intent !== refund.payment_intent) return 'mismatch';
  const committed = sentRefund(chain);
  if (committed !== null && committed !== refund.id) return 'mismatch';
  const confirmations = chain.filter((entry) => entry.kind === 'CONFIRMED');
  if (eventId !== null && confirmations.some((entry) => entry.event === eventId)) return 'duplicate';
  const statuses = confirmations
    .filter((entry) => entry.refund === refund.id)
    .map((entry) => (typeof entry.status === 'string' ? entry.status : ''));
  if (statuses.length === 0) return null;
  const standing = finalStatus(statuses)!;
  if (statusRank(refund.status) < statusRank(standing)) return 'out_of_order';
  if (statuses.at(-1) === refund.status) return 'duplicate';
  return null;
}

/** The recording result a blocker stands for. */
function resultOf(blocker: ConfirmationBlocker): RecordResult {
  switch (blocker) {
    case 'mismatch':
      return 'REFUSED:mismatch';
    case 'duplicate':
      return 'DUPLICATE_IGNORED';
    case 'out_of_order':
      return 'IGNORED:out_of_order';
    default:
      return assertNever(blocker);
  }
}

/**
 * Record what Stripe says about a refund as CONFIRMED, with one atomic check-and-append: two
 * deliveries of one event racing (in this process or another) record it once.
 */
export async function recordConfirmation(
  journal: JournalStore,
  effectId: string,
  refund: RefundFacts,
  source: ConfirmationSource,
): Promise<RecordResult> {
  const fields: FieldsOf<'CONFIRMED'> = {
    via: source.via,
    event: source.event,
    refund: refund.id,
    status: refund.status,
    amount: refund.amount,
    payment_intent: refund.payment_intent,
    created: source.created,
  };
  const appended = await journal.appendIf('CONFIRMED', effectId, (chain) => confirmationBlocker(chain, refund, source.event), fields);
  if (appended.blocker === null) return 'CONFIRMED';
  const blocker = CONFIRMATION_BLOCKERS.find((known) => known === appended.blocker);
  // Only our own check runs inside that appendIf, so any other blocker is our bug.
  if (blocker === undefined) throw new Error(`recordConfirmation: unexpected blocker ${appended.blocker}`);
  return resultOf(blocker);
}

function isConfirmingType(type: Json | undefined): type is ConfirmingEventType {
  return CONFIRMING_EVENT_TYPES.some((known) => known === type);
}

/**
 * Record a verified webhook event (core §8.2): only refund events count; the effect comes from
 * the refund's metadata and must have a chain here; then the recording rule decides.
 */
export async function confirmEvent(journal: JournalStore, event: StripeEventLike): Promise<ConfirmEventResult> {
  if (!isConfirmingType(event.type)) return 'IGNORED:type';
  const object = eventObject(event);
  const effectId = refundEffectId(object);
  if (effectId === null || (await journal.entries(effectId)).length === 0) return 'IGNORED:unknown_effect';
  const refund = readRefund(object);
  if (refund === null) return 'REFUSED:mismatch';
  const created = typeof event.created === 'number' && Number.isSafeInteger(event.created) ? event.created : null;
  return recordConfirmation(journal, effectId, refund, {
    via: 'webhook',
    event: typeof event.id === 'string' ? event.id : null,
    created,
  });
}
