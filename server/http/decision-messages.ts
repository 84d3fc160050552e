/** What an approver is told after deciding, for the statuses a decision can end in. */
export const DECISION_MESSAGES = {
  COMMITTED: 'Sent to Stripe once, under your approval.',
  COMMITTED_BY_RETRY: 'Sent to Stripe once, under your approval.',
  COMMITTED_ON_QUERY: 'Stripe already had this refund; nothing was sent twice.',
  REAPPLIED_AFTER_QUERY: 'Sent to Stripe once, under your approval.',
  DUPLICATE_IGNORED: 'This refund had already been sent; nothing was sent twice.',
  APPROVED: 'Your approval is recorded; it is sent as soon as Stripe can be reached.',
  PARTLY_APPROVED: 'Your approval is recorded (1 of 2). It is sent once a second approver, someone other than you, approves it.',
  REJECTED: 'Rejected. This refund will never be sent.',
  QUEUED: 'The repair became a new request; it waits for its approver group.',
  IN_FLIGHT: 'The refund is being sent; its outcome is settled before anything else happens.',
  SUPERSEDED: 'This item changed while you were looking (moved up the chain, or its facts changed). Here is what it shows now.',
  ALREADY_DECIDED: 'Someone already decided this item. Here is where it stands now.',
  AMBIGUOUS: 'A crash left it unknowable whether this refund went out; it is never resent. Close it once checked in Stripe.',
  'REFUSED:lease': 'You are not in the group this item is routed to now, or your approval lapsed; nothing was sent.',
  'REFUSED:ambiguous': 'An ambiguous item cannot be approved: it may already have been paid. Close it instead.',
  'REFUSED:no_repair': 'That repair is no longer offered; nothing was sent.',
  'REFUSED:repair_not_expressible': 'That repair cannot be expressed as a refund; nothing was sent.',
  'REFUSED:stale_premise': 'The facts changed since this was shown (for example a refund by hand). Nothing was sent; the item is back with what changed.',
  'REFUSED:target_error': 'Stripe refused the refund; nothing was sent. The item is back for a person to look at.',
} as const;

/** What an approver is told when an approval is refused as an error, nothing recorded (self_approval, same_approver). */
export const DECISION_REFUSALS = {
  beneficiary:
    "You cannot approve this refund: it is made for your benefit (the request names you as on_behalf_of, or the payment's customer email is yours). Nothing was recorded; someone else must approve it.",
  same_approver: 'You approved this item already; it needs a second approver, someone other than you. Nothing more was recorded.',
} as const;

/** The message for a decision's status, if it has one of its own. */
export function decisionMessage(status: string): string | undefined {
  return MESSAGES.get(status);
}

const MESSAGES: ReadonlyMap<string, string> = new Map(Object.entries(DECISION_MESSAGES));
