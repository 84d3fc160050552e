/** Codes a refusal can carry, in the gate and the inbox. */
export const REFUSAL_CODES = [
  'conflicting_payload',
  'lease',
  'stale_premise',
  'lease_used',
  'closed',
  'awaiting_decision',
  'target_error',
  'lease_at_recovery',
  'stale_premise_at_recovery',
  'ambiguous',
  'no_repair',
  'repair_not_expressible',
  'payment_missing',
  'beneficiary',
  'same_approver',
] as const;
/** One refusal code. */
export type RefusalCode = (typeof REFUSAL_CODES)[number];

/** Statuses that mean the refund landed (now, or earlier, or found by a lookup). */
export const LANDED_STATUSES = [
  'COMMITTED',
  'COMMITTED_BY_RETRY',
  'COMMITTED_ON_QUERY',
  'REAPPLIED_AFTER_QUERY',
  'DUPLICATE_IGNORED',
] as const;

/** Plain statuses (everything but the `REFUSED:<code>` and `UNRESOLVED:<name>` families). */
export const PLAIN_STATUSES = [
  ...LANDED_STATUSES,
  'IN_FLIGHT',
  'AMBIGUOUS',
  'QUEUED',
  'APPROVED',
  'PARTLY_APPROVED',
  'REJECTED',
  'CLOSED',
  'SUPERSEDED',
  'ALREADY_DECIDED',
  'NOT_SENT',
] as const;
/** One plain status. */
export type PlainStatus = (typeof PLAIN_STATUSES)[number];

/**
 * What a `QUEUED` request waits for: a person to decide it, or its turn to reach Stripe within
 * Stripe's rate limits (no person has it, nothing was sent yet). Answers that are not QUEUED say null.
 */
export const WAITING_FOR = ['person', 'stripe'] as const;
/** One thing a queued request can wait for. */
export type WaitingFor = (typeof WAITING_FOR)[number];

/** Every status the gate or the inbox can answer. */
export type Status = PlainStatus | `REFUSED:${RefusalCode}` | `UNRESOLVED:${string}`;

/** True for a status the gate or the inbox can answer (a refusal only with a known code). */
export function isStatus(value: string): value is Status {
  if ((PLAIN_STATUSES as readonly string[]).includes(value) || value.startsWith('UNRESOLVED:')) return true;
  return value.startsWith('REFUSED:') && (REFUSAL_CODES as readonly string[]).includes(value.slice('REFUSED:'.length));
}

/** The refusal status for a code. */
export function refused(code: RefusalCode): `REFUSED:${RefusalCode}` {
  return `REFUSED:${code}`;
}

/** Reasons an item can be put in front of a person, and the plain words for each. */
export const WHY = {
  needs_judgment: 'a rule wants a person to decide',
  stale_premise: 'a fact the decision relied on changed after it was made',
  stale_premise_at_recovery: 'a fact the decision relied on changed while the sender was down',
  lease: 'the authority behind it is not live',
  lease_used: 'the approval was already used by another attempt',
  lease_at_recovery: 'the authority lapsed while the sender was down',
  approval_expired: 'the approval is older than the allowed window, so the facts were read again',
  approver_removed: 'the approver is no longer in the group it was routed to',
  conflicting_payload: 'the same request was already decided with other arguments',
  target_error: 'Stripe reported an error and nothing was sent again',
  ambiguous: 'a crash left it unknowable whether it was sent, and there is no way to check',
  not_sent: 'the facts could not be read, so nothing was sent',
  in_flight: 'the outcome is not known yet; it is settled before any resend',
  unresolved: 'recovery could not settle it yet and will try again',
  awaiting_decision: 'it waits for a person to decide its latest escalation',
  closed: 'a person closed it; it is never sent',
  refused: 'it could not be sent safely',
  payment_missing: 'Stripe knows no such payment intent, so nothing was sent',
  beneficiary: 'the refund is made for the benefit of the person approving it, who may not approve it',
  same_approver: 'it needs two different people to approve it, and this person has already approved it',
  partly_approved: 'it needs a second approver, someone other than the first',
  waiting_turn: 'it is waiting its turn to reach Stripe: Interlock paces its calls to stay within Stripe’s rate limits; nothing has been sent yet',
} as const;
/** One reason code with plain words. */
export type WhyCode = keyof typeof WHY;

/** The plain words for a reason, falling back to the generic refusal text. */
export function whyFor(reason: string): string {
  return Object.hasOwn(WHY, reason) ? WHY[reason as WhyCode] : WHY.refused;
}

/** The reason code of a status: `REFUSED:x` gives `x`, `UNRESOLVED:*` gives `unresolved`. */
export function codeOf(status: string): string {
  if (status.startsWith('REFUSED:')) return status.slice('REFUSED:'.length);
  if (status.startsWith('UNRESOLVED')) return 'unresolved';
  return status.toLowerCase();
}

/** Throw for a value a closed union should never hold. */
export function assertNever(value: never): never {
  throw new Error(`unexpected value: ${String(value)}`);
}
