import type { DecisionAnswer, InboxItem, ItemDetail } from '../../shared/api.ts';
import { isJsonObject } from '../../shared/json.ts';
import { LANDED_STATUSES } from '../../shared/statuses.ts';
import type { PendingDecision } from './components/ConfirmDialog.tsx';
import { formatMoney } from './format.ts';
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

/** The request a repair decision created, from the answer's history. */
function repairChildOf(detail: ItemDetail): string | null {
  for (let i = detail.history.length - 1; i >= 0; i--) {
    const entry = detail.history[i];
    if (entry?.kind !== 'DECIDED') continue;
    return isJsonObject(entry.repair) && typeof entry.repair.request_id === 'string' ? entry.repair.request_id : null;
  }
  return null;
}

/** What a finished decision did, in a few words: "Sent $80.00 refund case-4471", "Rejected case-4471". */
export function finishedToast(answer: DecisionAnswer, decided: PendingDecision): { text: string; tone: Tone } {
  const amount = formatMoney(decided.amountCents, decided.currency);
  const repaired = decided.action === 'repair' ? decided.repair?.set.amount : undefined;
  const sentAmount = repaired === undefined ? amount : formatMoney(repaired, decided.currency);
  const id = decided.requestId;
  if (LANDED.has(answer.status)) {
    if (decided.action !== 'repair') return { text: `Sent ${amount} refund ${id}`, tone: 'success' };
    const child = repairChildOf(answer.item);
    return { text: `Sent ${sentAmount} refund ${child ?? id} (repair of ${id}, never sent)`, tone: 'success' };
  }
  switch (answer.status) {
    case 'REJECTED':
      return { text: `Rejected ${id}`, tone: 'neutral' };
    case 'CLOSED':
      return { text: `${id}: ${OUTCOME_LABELS[answer.item.outcome]}`, tone: 'neutral' };
    case 'PARTLY_APPROVED':
      return { text: `Approved ${amount} refund ${id} (1 of 2): it waits for a second approver`, tone: 'info' };
    case 'APPROVED':
    case 'IN_FLIGHT':
      return { text: `Approved ${sentAmount} refund ${id}: it is sent as soon as Stripe answers`, tone: 'info' };
    case 'QUEUED':
      return decided.action === 'repair'
        ? { text: `Repair accepted: ${sentAmount} for ${id} now waits for its group`, tone: 'info' }
        : { text: `${id} now waits for its group`, tone: 'info' };
    default:
      return { text: `${id}: ${answer.message}`, tone: 'neutral' };
  }
}
