import type { ApprovalVoidReason, ChainState, DecisionAction, NotificationRecord } from '../../shared/api.ts';
import type { LedgerOutcome } from '../../shared/ledger.ts';
import { LANDED_STATUSES, PLAIN_STATUSES, type PlainStatus, REFUSAL_CODES, type RefusalCode, type Status } from '../../shared/statuses.ts';

type NotificationStatus = NotificationRecord['status'];

/** How a state reads as a badge; a missing state does not compile. */
export const STATE_LABELS: Record<ChainState, string> = {
  NEW: 'New',
  SENDING: 'Sending to Stripe',
  DONE: 'Done: refund sent',
  CLOSED: 'Closed: never sent',
  ESCALATED: 'Waiting for a decision',
  NEEDS_ESCALATION: 'Being routed to a person',
  APPROVED: 'Approved, sending soon',
};

/** Where an item stands, as a sentence. */
export const STATE_SENTENCES: Record<ChainState, string> = {
  NEW: 'It was just asked for and is being checked.',
  SENDING: 'It is being sent to Stripe; its outcome is settled before anything else happens.',
  DONE: 'The refund was sent to Stripe.',
  CLOSED: 'It is closed and was never sent.',
  ESCALATED: 'It waits for a decision.',
  NEEDS_ESCALATION: 'It is being routed to a person.',
  APPROVED: 'It is approved and is sent as soon as Stripe answers.',
};

/** How a closed request ended, as a sentence: a rejection reads as a rejection everywhere. */
const CLOSED_SENTENCES: Record<LedgerOutcome, string> = {
  open: STATE_SENTENCES.CLOSED,
  refunded: STATE_SENTENCES.CLOSED,
  failed_at_stripe: STATE_SENTENCES.CLOSED,
  rejected: 'It was rejected and never sent.',
  repaired: 'A repair replaced it; it was never sent.',
  refused: 'It was refused and never sent.',
  ambiguous: STATE_SENTENCES.CLOSED,
  closed: 'It was closed with its outcome unknown, and is never sent again.',
};

/** Where an item stands, as a sentence, naming how a closed one ended. */
export function stateSentence(state: ChainState, outcome: LedgerOutcome): string {
  return state === 'CLOSED' ? CLOSED_SENTENCES[outcome] : STATE_SENTENCES[state];
}

/** The colour family of a badge or banner. */
export type Tone = 'success' | 'neutral' | 'warning' | 'danger' | 'info';

export const STATE_TONES: Record<ChainState, Tone> = {
  NEW: 'info',
  SENDING: 'info',
  DONE: 'success',
  CLOSED: 'neutral',
  ESCALATED: 'warning',
  NEEDS_ESCALATION: 'info',
  APPROVED: 'info',
};

/** The button word for each decision. */
export const ACTION_LABELS: Record<DecisionAction, string> = {
  approve: 'Approve',
  reject: 'Reject',
  repair: 'Accept repair',
  close: 'Close',
};

/** The headline after a decision, for the plain statuses. */
const PLAIN_TITLES: Record<PlainStatus, string> = {
  COMMITTED: 'Refund sent',
  COMMITTED_BY_RETRY: 'Refund sent',
  COMMITTED_ON_QUERY: 'Refund was already at Stripe',
  REAPPLIED_AFTER_QUERY: 'Refund sent',
  DUPLICATE_IGNORED: 'Already sent; nothing was sent twice',
  IN_FLIGHT: 'Sending to Stripe',
  AMBIGUOUS: 'Outcome unknown',
  QUEUED: 'Now waiting for its approver group',
  APPROVED: 'Approved; it is sent as soon as Stripe answers',
  PARTLY_APPROVED: 'Your approval is recorded: 1 of 2; it waits for a second approver',
  REJECTED: 'Rejected: never sent',
  CLOSED: 'Closed: never sent',
  SUPERSEDED: 'Not recorded: the item changed while you looked',
  ALREADY_DECIDED: 'Not recorded: someone already decided',
  NOT_SENT: 'Not sent',
};

/** The headline after a refusal, by its code. */
const REFUSAL_TITLES: Record<RefusalCode, string> = {
  conflicting_payload: 'Not sent: this request was already decided differently',
  lease: 'Not sent: you cannot decide this item any more',
  stale_premise: 'Not sent: the facts changed',
  lease_used: 'Not sent: that approval was already used',
  closed: 'Not sent: the item is closed',
  awaiting_decision: 'Not sent: it waits for a decision on its latest escalation',
  target_error: 'Not sent: Stripe refused the refund',
  lease_at_recovery: 'Not sent: the authority lapsed during recovery',
  stale_premise_at_recovery: 'Not sent: the facts changed during recovery',
  ambiguous: 'Not sent: an ambiguous item can only be closed',
  no_repair: 'Not sent: that repair is no longer offered',
  repair_not_expressible: 'Not sent: that repair cannot be expressed as a refund',
  payment_missing: 'Not sent: Stripe knows no such payment',
  beneficiary: 'Not recorded: the refund is for your own benefit',
  same_approver: 'Not recorded: you already approved it; it needs someone else',
};

const LANDED: ReadonlySet<string> = new Set(LANDED_STATUSES);
const PLAIN: ReadonlySet<string> = new Set(PLAIN_STATUSES);
const REFUSALS: ReadonlySet<string> = new Set(REFUSAL_CODES);

function isPlain(status: string): status is PlainStatus {
  return PLAIN.has(status);
}

/** The headline and colour of a decision's outcome. */
export function outcomeOf(status: Status): { title: string; tone: Tone } {
  if (LANDED.has(status)) return { title: PLAIN_TITLES[status as PlainStatus], tone: 'success' };
  if (isPlain(status)) {
    const tone: Tone = status === 'AMBIGUOUS' ? 'danger' : status === 'REJECTED' || status === 'CLOSED' ? 'neutral' : status === 'SUPERSEDED' || status === 'ALREADY_DECIDED' || status === 'NOT_SENT' ? 'warning' : 'info';
    return { title: PLAIN_TITLES[status], tone };
  }
  if (status.startsWith('REFUSED:')) {
    const code = status.slice('REFUSED:'.length);
    return { title: REFUSALS.has(code) ? REFUSAL_TITLES[code as RefusalCode] : 'Not sent', tone: 'warning' };
  }
  return { title: 'Not settled yet: recovery will try again', tone: 'danger' };
}

/**
 * How a request ended, one name each wherever it is shown (the ledger, Done and Closed, the item
 * page): a rejection reads "Rejected: never sent", never "Closed" or `CLOSED`, which is the agent's
 * word for a rejection, a repair and a closed ambiguity alike.
 */
export const OUTCOME_LABELS: Record<LedgerOutcome, string> = {
  open: 'Open: not settled yet',
  refunded: 'Refund sent',
  failed_at_stripe: 'Failed at Stripe: no money went back',
  rejected: 'Rejected: never sent',
  repaired: 'Repaired: a new request replaced it',
  refused: 'Refused: never sent',
  ambiguous: 'Outcome unknown',
  closed: 'Closed: outcome unknown, never sent again',
};

/** What each outcome means, for the ledger's filter and its totals. */
export const OUTCOME_MEANINGS: Record<LedgerOutcome, string> = {
  open: 'waiting its turn, for a person, approved and not sent yet, or being sent',
  refunded: 'sent to Stripe, and Stripe has not reported it failed',
  failed_at_stripe: 'sent, then reported failed or canceled by Stripe',
  rejected: 'a person rejected it',
  repaired: 'a person accepted a repair: a new request was sent instead',
  refused: 'refused with no person: Stripe knows no such payment',
  ambiguous: 'a crash left it unknown whether the send reached Stripe; it waits for a person',
  closed: 'a person closed a request whose send was ambiguous',
};

export const OUTCOME_TONES: Record<LedgerOutcome, Tone> = {
  open: 'info',
  refunded: 'success',
  failed_at_stripe: 'danger',
  rejected: 'neutral',
  repaired: 'neutral',
  refused: 'warning',
  ambiguous: 'danger',
  closed: 'neutral',
};

/** `REFUND_REMAINING` or `refund_remaining` as `Refund remaining`. */
export function humanize(code: string): string {
  const words = code.replaceAll('_', ' ').replaceAll(':', ': ').toLowerCase();
  return words.charAt(0).toUpperCase() + words.slice(1);
}

/** What Stripe's confirmation says, for the lists and the receipt. */
export function confirmationLabel(confirmed: boolean | 'pending' | null): { text: string; tone: Tone } {
  if (confirmed === true) return { text: 'Confirmed by Stripe', tone: 'success' };
  if (confirmed === 'pending') return { text: 'Stripe: pending', tone: 'info' };
  if (confirmed === false) return { text: 'Stripe: failed', tone: 'danger' };
  return { text: 'No confirmation', tone: 'neutral' };
}

/** Level 0 is the first group of a route's chain; people count from one. */
export function levelLabel(level: number): string {
  return `Level ${level + 1}`;
}

/** How a message to a person, a team or an agent stands, in words; a missing status does not compile. */
export const NOTIFICATION_STATUS_LABELS: Record<NotificationStatus, string> = {
  pending: 'Waiting to send',
  delivered: 'Delivered',
  retrying: 'Retrying',
  given_up: 'Given up',
  in_digest: 'In a digest',
};

export const NOTIFICATION_STATUS_TONES: Record<NotificationStatus, Tone> = {
  pending: 'neutral',
  delivered: 'success',
  retrying: 'info',
  given_up: 'warning',
  in_digest: 'neutral',
};

/**
 * What a message was for. `NotificationRecord.event` is a plain string in shared/api.ts (the
 * closed list is server/outbox/types.ts `MESSAGE_EVENTS`, worth moving to shared/), so an event
 * this page does not know yet is shown in sentence case rather than hidden.
 */
const NOTIFICATION_EVENT_LABELS: Readonly<Record<string, string>> = {
  escalated: 'Escalated',
  moved_up: 'Moved up after the deadline',
  reminder: 'Reminder',
  breach: 'Deadline missed',
  digest: 'Digest',
  final: 'Final status to the agent',
  failed_at_stripe: 'Refund failed at Stripe',
};

export function notificationEventLabel(event: string): string {
  return NOTIFICATION_EVENT_LABELS[event] ?? humanize(event);
}

/** Channel kinds as a message names them (`email:0`); the same caveat as the events. */
const CHANNEL_KIND_LABELS: Readonly<Record<string, string>> = {
  email: 'Email',
  slack: 'Slack',
  webhook: 'Webhook',
  callback: 'Callback',
};

/** `email:0` as `Email`, `email:1` as `Email 2`: the recipient's second email address. */
export function channelLabel(channel: string): string {
  const [kind = channel, index] = channel.split(':');
  const label = CHANNEL_KIND_LABELS[kind] ?? humanize(kind);
  const n = Number(index);
  return Number.isSafeInteger(n) && n > 0 ? `${label} ${n + 1}` : label;
}

/** Why an approval of a two-approver item no longer counts, after "no longer counts,". */
export const VOID_REASON_WORDS: Record<ApprovalVoidReason, string> = {
  moved_up: 'because the item moved up its chain to another group',
  facts_changed: 'because the payment changed and the item was shown again on the new facts',
  approval_expired: 'because it expired before a second person approved',
  approver_removed: 'because the approver is no longer in the group',
  escalated_again: 'because the item was put in front of people again',
  rejected: 'because another person rejected it before a second approval',
  repaired: 'because another person accepted a repair instead before a second approval',
};
