import type { DecisionAnswer, InboxItem } from '../../shared/api.ts';
import { LANDED_STATUSES } from '../../shared/statuses.ts';
import type { PendingDecision } from './components/ConfirmDialog.tsx';
import { formatMoney, namesInWords } from './format.ts';
import { OUTCOME_LABELS, type Tone } from './labels.ts';

// After a decision that finished an item, the page opens the next one in the queue the person
// was working (the inbox's order and filters), with a toast naming what was sent.

const LANDED: ReadonlySet<string> = new Set(LANDED_STATUSES);

/**
 * The item to open after `effectId`: the first of those after it in the queue as it was shown
 * that is still open, else the first still open before it; null when none is left.
 */
export function nextAfter(queue: readonly string[], effectId: string, stillOpen: ReadonlySet<string>): string | null {
  const at = queue.indexOf(effectId);
  const after = at < 0 ? queue : queue.slice(at + 1);
  const before = at < 0 ? [] : queue.slice(0, at);
  return [...after, ...before].find((id) => id !== effectId && stillOpen.has(id)) ?? null;
}

/** True when `reader` gave one of the approvals that still count on a two-approver item: it waits for someone else. */
export function approvedBy(item: InboxItem, reader: string): boolean {
  return item.approvals?.given.some((approval) => approval.by === reader) ?? false;
}

/**
 * True when `reader` may approve the item and has not: not one they approved already (it waits
 * for someone else), not one made on their behalf, not one that can only be closed.
 */
export function needsMyApproval(item: InboxItem, reader: string): boolean {
  return !approvedBy(item, reader) && item.request.on_behalf_of !== reader && item.reason !== 'ambiguous';
}

/** The items the next one may be, for `reader`: still open, and none they approved already (`a` could do nothing there). */
export function nextOpenFor(items: readonly InboxItem[], reader: string): ReadonlySet<string> {
  return new Set(items.filter((item) => !approvedBy(item, reader)).map((item) => item.effect_id));
}

/**
 * What a finished decision did, in a few words a person uses: the amount, the request as the agent
 * named it and who paid ("Sent $80.00 refund case-4471 to Jo Smith"), never the id of a request a
 * repair made; an approval on the facts now is said to be one, and the last of two approvals says
 * 2 of 2 and whose came first.
 */
export function finishedToast(answer: DecisionAnswer, decided: PendingDecision): { text: string; tone: Tone } {
  const amount = formatMoney(decided.amountCents, decided.currency);
  const repaired = decided.action === 'repair' ? decided.repair?.set.amount : undefined;
  const onFactsNow = decided.action === 'repair' && decided.repair !== undefined && Object.keys(decided.repair.set).length === 0;
  const sentAmount = repaired === undefined ? amount : formatMoney(repaired, decided.currency);
  const id = decided.requestId;
  const to = decided.customer ? ` to ${decided.customer}` : '';
  const before = decided.approvedBefore ?? [];
  const both = before.length > 0 ? `, approved ${before.length + 1} of ${before.length + 1}: ${namesInWords(before)} first, then you` : '';
  if (LANDED.has(answer.status)) {
    if (onFactsNow) return { text: `Sent ${amount} refund ${id}${to}, an approval on the facts now${both}`, tone: 'success' };
    if (decided.action !== 'repair') return { text: `Sent ${amount} refund ${id}${to}${both}`, tone: 'success' };
    return { text: `Sent ${sentAmount} refund${to} instead of the ${amount} asked in ${id}, which is closed and never sent`, tone: 'success' };
  }
  switch (answer.status) {
    case 'REJECTED':
      return { text: `Rejected ${id}: ${amount}${decided.customer ? ` for ${decided.customer}` : ''}, never sent`, tone: 'neutral' };
    case 'CLOSED':
      return { text: `${id}: ${OUTCOME_LABELS[answer.item.outcome]}`, tone: 'neutral' };
    case 'PARTLY_APPROVED':
      return { text: `Approved ${amount} refund ${id} (1 of 2): it waits for a second approver`, tone: 'info' };
    case 'APPROVED':
    case 'IN_FLIGHT':
      return { text: `Approved ${sentAmount} refund ${id}${to}${both}: it is sent as soon as Stripe answers`, tone: 'info' };
    case 'QUEUED':
      return decided.action === 'repair' && !onFactsNow
        ? { text: `Repair accepted: ${sentAmount}${to} instead of the ${amount} asked in ${id} now waits for its group`, tone: 'info' }
        : { text: `${id} now waits for its group`, tone: 'info' };
    default:
      return { text: `${id}: ${answer.message}`, tone: 'neutral' };
  }
}
