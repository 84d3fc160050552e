import type { Change, Repair } from '../../shared/entries.ts';
import { type JsonObject, jsonEqual } from '../../shared/json.ts';
import { formatAmount } from '../../shared/money.ts';
import type { Explained } from './target.ts';

/** Facts compared and repaired, free of I/O: the targets read the world, this decides. */

/** One change per key (sorted) whose value differs between two fact objects; a missing key reads as null. */
export function diffFacts(was: JsonObject, now: JsonObject): Change[] {
  const keys = [...new Set([...Object.keys(was), ...Object.keys(now)])].sort();
  const changes: Change[] = [];
  for (const field of keys) {
    const before = was[field] ?? null;
    const after = now[field] ?? null;
    if (!jsonEqual(before, after)) changes.push({ field, was: before, now: after });
  }
  return changes;
}

/**
 * An amount for people, in the currency's smallest unit: 7000 → "$70.00", or in the payment's
 * own currency when the facts name one (7000 yen → "¥7,000", never "$70.00").
 */
export function formatCents(amountCents: number, currency?: string | null): string {
  if (typeof currency === 'string' && /^[A-Za-z]{3}$/.test(currency) && currency.toLowerCase() !== 'usd') return formatAmount(amountCents, currency);
  const sign = amountCents < 0 ? '-' : '';
  const abs = Math.abs(amountCents);
  return `${sign}$${Math.floor(abs / 100).toLocaleString('en-US')}.${String(abs % 100).padStart(2, '0')}`;
}

/**
 * The safe repairs for a refund of `amountCents` when `remainingCents` of `totalCents` is left:
 * the same amount if it still fits, else what is left, else nothing.
 */
export function repairsThatFit(amountCents: number, remainingCents: number, totalCents: number, currency?: string | null): Repair[] {
  const money = (cents: number) => formatCents(cents, currency);
  if (amountCents > 0 && amountCents <= remainingCents) {
    return [
      {
        code: 'still_fits',
        set: {},
        why:
          `${money(amountCents)} still fits: ${money(remainingCents)} of ${money(totalCents)} is left to refund, ` +
          'unless the refund made outside Interlock was this one',
      },
    ];
  }
  if (remainingCents > 0 && remainingCents < amountCents) {
    return [
      {
        code: 'refund_remaining',
        set: { amount: remainingCents },
        why: `Refund ${money(remainingCents)}, what is left of ${money(totalCents)}`,
      },
    ];
  }
  return [];
}

/** One line for a person: `field: was X, now Y`. */
export function renderChange(change: Change): string {
  return `${change.field}: was ${JSON.stringify(change.was)}, now ${JSON.stringify(change.now)}`;
}

/** A payment's facts as a refund target reads them (see StripeRefunds.capture). */
export interface RefundFacts extends JsonObject {
  payment_intent: string;
  amount_received: number;
  refunded_by_others: number;
  refunded_outside: number;
  disputed: boolean;
}

/** True for facts with every field a refund's judgement reads, each of its type. */
export function isRefundFacts(facts: JsonObject): facts is RefundFacts {
  const counts = ['amount_received', 'refunded_by_others', 'refunded_outside'] as const;
  return typeof facts.payment_intent === 'string' && typeof facts.disputed === 'boolean' && counts.every((k) => Number.isSafeInteger(facts[k]));
}

/**
 * Judge the facts a refund was decided on against the facts now (both targets share this, so the
 * simulator judges as Stripe's target does). A change breaks the premise, except under the rules
 * (`headroom`) when only Interlock's own refunds moved and this one still fits. A refund larger
 * than what is left is refused even when nothing moved since a person saw it: Stripe would refuse
 * it anyway, and refusing it here keeps the repair (refund what is left) instead of a target error.
 */
export function judgeRefundFacts(premises: JsonObject, now: RefundFacts, amountCents: number, headroom: boolean): Explained {
  // Facts recorded before refunds outside Interlock were told apart are compared as they were.
  const tellsApart = Object.hasOwn(premises, 'refunded_outside');
  const { refunded_outside: _outside, ...comparable } = now;
  const changes = diffFacts(premises, tellsApart ? now : comparable);
  const leftCents = now.amount_received - now.refunded_by_others;
  const fits = amountCents <= leftCents;
  const onlyInterlockMoved = tellsApart && changes.every((c) => c.field === 'refunded_by_others') && fits;
  if ((changes.length === 0 && fits) || (headroom && onlyInterlockMoved)) return { violations: [], changes: [], repairs: [] };
  const violations = changes.map(renderChange);
  const currency = typeof premises.currency === 'string' ? premises.currency : null;
  if (!fits) violations.push(`amount: ${formatCents(amountCents, currency)} is more than the ${formatCents(Math.max(0, leftCents), currency)} left to refund`);
  // A disputed charge cannot be refunded safely at all, so nothing is suggested.
  const repairs = now.disputed ? [] : repairsThatFit(amountCents, leftCents, now.amount_received, currency);
  return { violations, changes, repairs };
}
