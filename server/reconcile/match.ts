import type Stripe from 'stripe';
import type { ReconciliationResult, ReconciliationRow } from '../../shared/api.ts';
import { RECONCILIATION_CATEGORIES, type ReconciliationCategory } from '../../shared/reconciliation.ts';
import { UNKNOWN_CURRENCY } from '../../shared/money.ts';
import type { JournalRefund, JournalSide } from './journal-side.ts';

/** A period of wall-clock time: `fromMs` in it, `toMs` not. */
export interface Period {
  fromMs: number;
  toMs: number;
}

/** What to compare: the journal, the refunds Stripe listed for its payments (within the slack), and how. */
export interface CompareInput {
  journal: JournalSide;
  stripeRefunds: readonly Stripe.Refund[];
  period: Period;
  slackMs: number;
  /** The metadata key whose value is the effect id that sent a refund. */
  effectKey: string;
  rowsPerCategoryMax: number;
}

/** Items named per payment in a row, to open one from a refund by hand. */
const PAYMENT_ITEMS_MAX = 5;

/** Stripe's refund statuses under which no money went back. */
const FAILED_STATUSES: ReadonlySet<string> = new Set(['failed', 'canceled']);

const within = (ms: number, period: Period) => ms >= period.fromMs && ms < period.toMs;
const createdMs = (refund: Stripe.Refund) => refund.created * 1000;

/**
 * Compare the journal with Stripe for a period. Each refund belongs to exactly one period: a
 * refund the journal recorded as COMMITTED to the period of that record, any other to the period
 * of Stripe's `created`. A recorded refund's Stripe side is looked for across the edges as far as
 * the slack (Stripe was listed that far), so a refund Stripe created just before midnight and the
 * journal recorded just after matches, in the period of the record, and is no refund by hand in
 * the period before. Pure: no I/O, no clock.
 */
export function compareRefunds(input: CompareInput): ReconciliationResult {
  const { journal, period, effectKey } = input;
  const rows = new Map<ReconciliationCategory, ReconciliationRow[]>(RECONCILIATION_CATEGORIES.map((c) => [c, []]));
  const add = (category: ReconciliationCategory, row: ReconciliationRow) => rows.get(category)!.push(row);

  const byEffect = new Map<string, Stripe.Refund[]>();
  for (const refund of input.stripeRefunds) {
    const effectId = refund.metadata?.[effectKey];
    if (effectId === undefined || !journal.refunds.has(effectId)) continue;
    byEffect.set(effectId, [...(byEffect.get(effectId) ?? []), refund]);
  }
  const compared = new Set<string>();

  for (const recorded of journal.refunds.values()) {
    const candidates = byEffect.get(recorded.effectId) ?? [];
    if (recorded.committed === null) {
      // Sent under our id (the metadata says so) but never recorded as COMMITTED: in flight, or AMBIGUOUS.
      for (const refund of candidates.filter((r) => within(createdMs(r), period))) {
        compared.add(refund.id);
        add('unrecorded', rowOf(journal, recorded, refund));
      }
      continue;
    }
    // The refund the journal names, and only it: another under the same effect id is no stand-in
    // for a refund missing in Stripe. When the record names none, the first listed under its effect id.
    if (!within(recorded.committed.atMs, period)) continue;
    const named = recorded.committed.refundId;
    const found = named === null ? candidates[0] : candidates.find((r) => r.id === named);
    for (const refund of candidates) compared.add(refund.id);
    if (found === undefined) add('missing_in_stripe', rowOf(journal, recorded, null));
    // A refund Stripe failed returned nothing, whatever its amount: its own category, never matched money.
    else if (FAILED_STATUSES.has(found.status ?? '')) add('failed_at_stripe', rowOf(journal, recorded, found));
    else add(found.amount === recorded.amountCents ? 'matched' : 'amount_mismatch', rowOf(journal, recorded, found));
    // A second refund under one effect id is money sent twice: never hidden behind the match. It is
    // not the refund recorded, so it belongs to the period Stripe created it in, as any other.
    for (const extra of candidates.filter((r) => r !== found && within(createdMs(r), period))) add('unrecorded', rowOf(journal, recorded, extra));
  }

  for (const refund of input.stripeRefunds) {
    if (compared.has(refund.id) || !within(createdMs(refund), period)) continue;
    const effectId = refund.metadata?.[effectKey];
    const recorded = effectId === undefined ? undefined : journal.refunds.get(effectId);
    // Our effect ids are all in `journal`; anything else was made outside Interlock.
    if (recorded === undefined) add('by_hand', rowOf(journal, null, refund));
    // Under the effect id of a refund recorded in another period, and not the refund it recorded
    // (a copied id, or a second send): money that period's run cannot see, so this one shows it.
    // When the record names no refund id, the refund may be the recorded one, matched there.
    else {
      const recordedRefund = recorded.committed?.refundId ?? null;
      if (recordedRefund !== null && recordedRefund !== refund.id) add('unrecorded', rowOf(journal, recorded, refund));
    }
  }

  const summed = (category: ReconciliationCategory) => {
    const all = rows.get(category)!.sort(byTime);
    return { count: all.length, amounts: sumByCurrency(all), rows: all.slice(0, input.rowsPerCategoryMax) };
  };
  return {
    matched: summed('matched'),
    missing_in_stripe: summed('missing_in_stripe'),
    amount_mismatch: summed('amount_mismatch'),
    by_hand: summed('by_hand'),
    unrecorded: summed('unrecorded'),
    failed_at_stripe: summed('failed_at_stripe'),
    slack_ms: input.slackMs,
    payment_intents: journal.byPaymentIntent.size,
    refunds_listed: input.stripeRefunds.length,
  };
}

function rowOf(journal: JournalSide, recorded: JournalRefund | null, refund: Stripe.Refund | null): ReconciliationRow {
  const paymentIntent = recorded?.paymentIntent ?? paymentIntentOf(refund);
  return {
    payment_intent: paymentIntent,
    effect_id: recorded?.effectId ?? null,
    request_id: recorded?.requestId ?? null,
    agent: recorded?.agent ?? null,
    currency: refund?.currency ?? recorded?.currency ?? null,
    journal_refund: recorded?.committed?.refundId ?? null,
    journal_amount: recorded?.committed ? recorded.amountCents : null,
    journal_at_ms: recorded?.committed?.atMs ?? null,
    stripe_refund: refund?.id ?? null,
    stripe_amount: refund?.amount ?? null,
    stripe_status: refund?.status ?? null,
    stripe_created_ms: refund ? createdMs(refund) : null,
    payment_items: (journal.byPaymentIntent.get(paymentIntent) ?? []).slice(0, PAYMENT_ITEMS_MAX),
  };
}

function paymentIntentOf(refund: Stripe.Refund | null): string {
  const intent = refund?.payment_intent;
  return typeof intent === 'string' ? intent : (intent?.id ?? '');
}

/** Oldest first, by whichever side has a time; ties by refund id, so a result reads the same every run. */
function byTime(a: ReconciliationRow, b: ReconciliationRow): number {
  const at = (row: ReconciliationRow) => row.stripe_created_ms ?? row.journal_at_ms ?? 0;
  return at(a) - at(b) || (a.stripe_refund ?? a.effect_id ?? '').localeCompare(b.stripe_refund ?? b.effect_id ?? '');
}

/** Sums per currency, Stripe's amount where Stripe has the refund; never added across currencies. */
function sumByCurrency(rows: readonly ReconciliationRow[]): Record<string, number> {
  const sums: Record<string, number> = {};
  for (const row of rows) {
    const currency = row.currency ?? UNKNOWN_CURRENCY;
    sums[currency] = (sums[currency] ?? 0) + (row.stripe_amount ?? row.journal_amount ?? 0);
  }
  return sums;
}
