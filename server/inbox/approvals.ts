import type { ApprovalVoidReason, InboxItem } from '../../shared/api.ts';
import type { Decided, Entry, Escalated } from '../../shared/entries.ts';
import { allOf, answerOf, approvalsOf, approvalsRequired, latestEscalation } from '../journal/chain.ts';

/**
 * Four-eyes and no self-approval, as pure decisions over a chain as read: how many approvers a
 * routed item needs, whether a person's approval may be recorded and whether it completes the
 * escalation, and why an approval no longer counts. No clock of their own, no I/O.
 */

/** Approvers needed from `amountMinor` upwards in each currency named; absent means one always. */
export type TwoApproversFrom = Readonly<Record<string, number>> | null;

/**
 * How many distinct people must approve a refund of `amountMinor` in `currency` on a route: two
 * from the route's amount in that currency upwards. Money in a currency the route does not name
 * counts as over it (as every threshold of the config treats unknown money), so it needs two.
 */
export function approvalsRequiredFor(twoFrom: TwoApproversFrom, amountMinor: number, currency: string | null): number {
  if (twoFrom === null) return 1;
  const threshold = currency === null ? undefined : twoFrom[currency.toLowerCase()];
  return threshold === undefined || amountMinor >= threshold ? 2 : 1;
}

/** Who a refund benefits, as far as Interlock can tell. */
export interface Beneficiary {
  /** The request's `on_behalf_of`: a person's name or email address, as the agent gave it. */
  onBehalfOf: string | null;
  /** The payment's customer email, from the payment as Stripe knows it. */
  customerEmail: string | null;
}

/** A person who approves, with every email address the config knows them by. */
export interface Approver {
  name: string;
  emails: readonly string[];
}

/** Why a person is the refund's beneficiary: named by the request, or the payment's customer is them. */
export type BeneficiaryMatch = 'on_behalf_of' | 'customer_email';

/**
 * Whether `approver` is the person the refund benefits: the request names them (by name or by an
 * email of theirs), or the payment's customer email is theirs. Compared without regard to case
 * or surrounding spaces; null when neither holds.
 */
export function beneficiaryMatch(approver: Approver, beneficiary: Beneficiary): BeneficiaryMatch | null {
  const own = new Set([approver.name, ...approver.emails].map(folded));
  if (beneficiary.onBehalfOf !== null && own.has(folded(beneficiary.onBehalfOf))) return 'on_behalf_of';
  if (beneficiary.customerEmail !== null && approver.emails.some((e) => folded(e) === folded(beneficiary.customerEmail!))) return 'customer_email';
  return null;
}

function folded(text: string): string {
  return text.trim().toLowerCase();
}

/** What an approval does, decided on the chain as read and the escalation it names. */
export type ApprovalStep =
  /** Record it: it answers the escalation (`completes`), or it is one of the approvals it needs. */
  | { next: 'record'; completes: boolean; count: number; required: number }
  /** Refuse it, recording nothing: the approver is the beneficiary, or has already approved it. */
  | { next: 'refuse'; code: 'beneficiary'; match: BeneficiaryMatch }
  | { next: 'refuse'; code: 'same_approver' };

/**
 * Decide a person's approval of `escalation` (the latest, which they may decide), first match
 * wins: the beneficiary never approves; a person is never two of its approvers; otherwise it is
 * recorded, and completes the escalation when it brings the distinct approvers to the count.
 */
export function decideApproval(chain: readonly Entry[], escalation: Escalated, approver: Approver, beneficiary: Beneficiary): ApprovalStep {
  const match = beneficiaryMatch(approver, beneficiary);
  if (match !== null) return { next: 'refuse', code: 'beneficiary', match };
  const approvals = approvalsOf(chain, escalation);
  if (approvals.some((a) => a.by === approver.name)) return { next: 'refuse', code: 'same_approver' };
  const required = approvalsRequired(escalation);
  const count = approvals.length + 1;
  return { next: 'record', completes: count >= required, count, required };
}

/** Why an approval no longer counts (shared/api.ts). */
export type VoidReason = ApprovalVoidReason;

/** One approval of a four-eyes escalation, as the item shows it. */
export interface ApprovalShown {
  by: string;
  at_ms: number;
  /** Null while it counts; else why it no longer does. */
  voided: VoidReason | null;
}

/** Where the approvals of an open escalation stand, with the approvals voided just before it. */
export interface ApprovalStanding {
  required: number;
  /** Approvals of the latest escalation that still count. */
  approvals: ApprovalShown[];
  /** Approvals of the escalation before it that never reached its count, each with why it lapsed. */
  voided: ApprovalShown[];
}

/** What the standing is judged against now: the approval window and the members of a group. */
export interface Liveness {
  nowMs: number;
  maxAgeMs: number | null;
  members: (group: string) => readonly string[];
}

/**
 * Why an approval of `escalation` is no longer live now: older than the window, or its approver is
 * no longer in the group; null while it is.
 */
export function lapsed(approval: Pick<Decided, 'by' | 'at_ms'>, escalation: Pick<Escalated, 'group'>, live: Liveness): 'approval_expired' | 'approver_removed' | null {
  if (live.maxAgeMs !== null && live.nowMs - approval.at_ms > live.maxAgeMs) return 'approval_expired';
  if (!live.members(escalation.group).includes(approval.by)) return 'approver_removed';
  return null;
}

/**
 * A queue's item with only the approvals that still count now, as the agent's answer and the item
 * page count them: the views keep every one journaled, and one expires or loses its approver
 * without a journal entry.
 */
export function withLiveApprovals(item: InboxItem, live: Liveness): InboxItem {
  if (item.approvals === undefined) return item;
  return { ...item, approvals: { ...item.approvals, given: item.approvals.given.filter((a) => lapsed(a, item, live) === null) } };
}

/**
 * The four-eyes standing of a chain's latest escalation, or null when it needs one approver only.
 * An approval lapsed now is shown voided with why; the approvals of the escalation before it that
 * never reached its count are voided by that newer escalation: moved up the chain, facts read
 * again, or shown again because an approval lapsed.
 */
export function approvalStanding(chain: readonly Entry[], live: Liveness): ApprovalStanding | null {
  const { escalation } = latestEscalation(chain);
  if (!escalation || approvalsRequired(escalation) <= 1) return null;
  const approvals = approvalsOf(chain, escalation).map((a) => ({ by: a.by, at_ms: a.at_ms, voided: lapsed(a, escalation, live) }));
  const escalations = allOf(chain, 'ESCALATED');
  const before = escalations.at(-2);
  const voided: ApprovalShown[] = [];
  if (before && !latestEscalation(chain.slice(0, chain.indexOf(escalation))).decision) {
    for (const a of approvalsOf(chain, before)) voided.push({ by: a.by, at_ms: a.at_ms, voided: voidedBy(a, before, escalation, live.maxAgeMs) });
  }
  return { required: approvalsRequired(escalation), approvals, voided };
}

/** Why the escalation `after` voided an approval of `before`. */
export function voidedBy(approval: Decided, before: Escalated, after: Escalated, maxAgeMs: number | null): VoidReason {
  if (after.level > before.level) return 'moved_up';
  if (maxAgeMs !== null && after.at_ms - approval.at_ms > maxAgeMs) return 'approval_expired';
  if (!after.routed_to.includes(approval.by)) return 'approver_removed';
  if (after.changes.length > 0) return 'facts_changed';
  return 'escalated_again';
}

/** One approval in an item's history, of an escalation that needs more than one approver. */
export interface ApprovalInHistory {
  hash: string;
  by: string;
  at_ms: number;
  /** 1 for the first approval of its escalation. */
  nth: number;
  required: number;
  /** The approval that brought its escalation to the count. */
  completes: boolean;
  /** Why it no longer counts; null while it does, or once it completed. */
  voided: VoidReason | null;
}

/**
 * Every approval of the chain's multi-approver escalations, in journal order: which of how many,
 * the one that completed its escalation, or why it no longer counts. An approval short of the
 * count is voided by the escalation after it (moved up, facts read again, lapsed), by another
 * person closing the item first (a rejection or an accepted repair), or, on the open escalation,
 * by lapsing now.
 */
export function approvalHistory(chain: readonly Entry[], live: Liveness): ApprovalInHistory[] {
  const escalations = allOf(chain, 'ESCALATED');
  const shown: ApprovalInHistory[] = [];
  escalations.forEach((escalation, i) => {
    const required = approvalsRequired(escalation);
    if (required <= 1) return;
    const answer = answerOf(chain, escalation);
    const after = escalations[i + 1];
    approvalsOf(chain, escalation).forEach((approval, k) => {
      const completes = approval === answer;
      shown.push({ hash: approval.hash, by: approval.by, at_ms: approval.at_ms, nth: k + 1, required, completes, voided: completes ? null : voidedNow(approval, escalation, answer, after, live) });
    });
  });
  return shown.sort((a, b) => chain.findIndex((e) => e.hash === a.hash) - chain.findIndex((e) => e.hash === b.hash));
}

/** Why an approval short of its escalation's count no longer counts, or null while it does. */
function voidedNow(approval: Decided, escalation: Escalated, answer: Decided | undefined, after: Escalated | undefined, live: Liveness): VoidReason | null {
  if (answer?.decision === 'reject') return 'rejected';
  if (answer?.decision === 'repair') return 'repaired';
  if (answer !== undefined) return null;
  return after === undefined ? lapsed(approval, escalation, live) : voidedBy(approval, escalation, after, live.maxAgeMs);
}
