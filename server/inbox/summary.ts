import { type ChainState, type HistoryItem, type InboxItem, isRefundRequest, type RefundRequest } from '../../shared/api.ts';
import type { Committed, Decided, Entry, Escalated } from '../../shared/entries.ts';
import { isJsonObject, type Json } from '../../shared/json.ts';
import { approvalsRequired, closesDispatch } from '../journal/chain.ts';
import { finalStatus } from '../journal/confirmations.ts';
import { isPersonLease, isPolicyLease } from '../gate/leases.ts';
import { isStatus, type Status } from '../../shared/statuses.ts';
import { isFailedAtStripe, outcomeOf } from '../ledger/outcome.ts';
import { owesEscalation } from './state.ts';

/** What the views need of one chain, kept up to date entry by entry instead of holding every entry. */
export interface ChainSummary {
  effectId: string;
  agent: string | null;
  request: RefundRequest | null;
  /** The payment's currency as Stripe writes it, from the first facts the chain read (null while none named it). */
  currency: string | null;
  openDispatch: boolean;
  committed: Committed | null;
  ambiguous: boolean;
  /** Refused for good: Stripe knows no such payment (`payment_missing`), which no person is asked about. */
  refusedForGood: boolean;
  closedBy: Decided | null;
  latest: Escalated | null;
  /** The deadline missed at the top of the chain: the last deadline before a breach with none left. */
  missedDueMs: number | null;
  /** The latest escalation is a breach, or shows again (on new facts) one that was. */
  breached: boolean;
  /** When the agent asked, on the application clock: the first PROPOSED's, else the first escalation's. */
  askedAtMs: number | null;
  /** The `x-request-id` of the call that asked (the first PROPOSED that kept one), for finding its log lines. */
  httpRequestId: string | null;
  /** When the open trip to a person began: the first escalation since the last decision. */
  waitingSinceMs: number | null;
  /** The group the item last moved up from because its deadline passed there, and that deadline, while the item is still unanswered. */
  movedFrom: { group: string; dueMs: number | null; atMs: number } | null;
  latestDecision: Decided | null;
  /** The people who approved the latest escalation while it needs more than that (four-eyes), and when. */
  latestApprovers: Map<string, number>;
  owesSinceDecision: boolean;
  escalated: boolean;
  /** Every group the chain was ever routed to: who may look at it. */
  groups: Set<string>;
  lastDispatchLease: Json;
  /** The last refusal or ambiguity, for telling the agent why. */
  lastRefusal: Entry | null;
  confirmations: string[];
  updatedAtMs: number;
}

export function emptySummary(effectId: string): ChainSummary {
  return {
    effectId,
    agent: null,
    request: null,
    currency: null,
    openDispatch: false,
    committed: null,
    ambiguous: false,
    refusedForGood: false,
    closedBy: null,
    latest: null,
    missedDueMs: null,
    breached: false,
    askedAtMs: null,
    httpRequestId: null,
    waitingSinceMs: null,
    movedFrom: null,
    latestDecision: null,
    latestApprovers: new Map(),
    owesSinceDecision: false,
    escalated: false,
    groups: new Set(),
    lastDispatchLease: null,
    lastRefusal: null,
    confirmations: [],
    updatedAtMs: 0,
  };
}

/** Fold one entry into a chain's summary (the same order of rules as `chainState`). */
export function foldEntry(summary: ChainSummary, entry: Entry): void {
  if (summary.agent === null && entry.kind === 'PROPOSED') summary.agent = entry.agent;
  if (summary.request === null && entry.kind === 'PROPOSED' && isRefundRequest(entry.request)) summary.request = entry.request;
  if (summary.askedAtMs === null && entry.kind === 'PROPOSED' && typeof entry.at_ms === 'number') summary.askedAtMs = entry.at_ms;
  if (summary.httpRequestId === null && entry.kind === 'PROPOSED' && entry.http_request_id !== undefined) summary.httpRequestId = entry.http_request_id;
  // A request that waited its turn for Stripe was bound with no facts; the facts read at its turn name it.
  if (entry.kind === 'PROPOSED' || entry.kind === 'DISPATCHED') summary.currency ??= currencyIn(entry.premises);
  if (entry.kind === 'ESCALATED') summary.currency ??= currencyIn(entry.facts);
  if (entry.kind === 'DISPATCHED') {
    summary.openDispatch = true;
    summary.lastDispatchLease = entry.lease;
  } else if (closesDispatch(entry)) summary.openDispatch = false;
  if (entry.kind === 'COMMITTED' && summary.committed === null) summary.committed = entry;
  if (entry.kind === 'AMBIGUOUS') summary.ambiguous = true;
  if (entry.kind === 'REFUSED' && entry.code === 'payment_missing') summary.refusedForGood = true;
  if (entry.kind === 'ESCALATED') {
    // A re-show (the unanswered escalation again on new facts, no breach of its own) keeps the
    // breach and missed deadline of the one it replaces; only ESCALATED breach:true is counted.
    const reshown = summary.latest !== null && summary.latestDecision === null && !entry.breach;
    // A breach with no deadline left missed the deadline before it.
    if (!reshown && (entry.due_ms !== null || !entry.breach)) summary.missedDueMs = null;
    else if (!reshown && summary.latest?.due_ms != null) summary.missedDueMs = summary.latest.due_ms;
    summary.breached = entry.breach || (reshown && summary.breached);
    foldTrip(summary, entry);
    summary.latest = entry;
    summary.latestDecision = null;
    summary.latestApprovers = new Map();
    summary.escalated = true;
    summary.groups.add(entry.group);
  }
  if (entry.kind === 'DECIDED') {
    if (summary.closedBy === null && (entry.decision === 'reject' || entry.decision === 'repair')) summary.closedBy = entry;
    if (summary.latest && entry.escalation === summary.latest.hash && summary.latestDecision === null) {
      // An approval short of the count the escalation needs answers nothing (latestEscalation's rule).
      if (entry.decision === 'approve' && !summary.latestApprovers.has(entry.by)) summary.latestApprovers.set(entry.by, entry.at_ms);
      if (entry.decision !== 'approve' || summary.latestApprovers.size >= approvalsRequired(summary.latest)) {
        summary.latestDecision = entry;
        summary.owesSinceDecision = false;
      }
    }
  }
  if (owesEscalation(entry)) {
    summary.owesSinceDecision = true;
    summary.lastRefusal = entry;
  }
  if (entry.kind === 'CONFIRMED') summary.confirmations.push(entry.status);
  if ('at_ms' in entry && typeof entry.at_ms === 'number') summary.updatedAtMs = entry.at_ms;
}

function currencyIn(facts: Json | undefined): string | null {
  return facts !== undefined && isJsonObject(facts) && typeof facts.currency === 'string' ? facts.currency : null;
}

/**
 * Every person whose approval sent the chain (the lease it was sent, or is being sent, under), else
 * whose approvals stand unsent, by login, the earliest first: both of a four-eyes refund, one
 * otherwise; empty for the policy and for a chain no approval sent.
 */
export function approversOf(s: ChainSummary): string[] {
  if (s.committed !== null || s.openDispatch) {
    const lease = s.lastDispatchLease;
    return isPersonLease(lease) ? [...(lease.co_approvals ?? []).map((a) => a.by), lease.by] : [];
  }
  return s.closedBy === null && s.latestDecision?.decision === 'approve' ? [...s.latestApprovers.keys()] : [];
}

/**
 * Keep when the open trip to a person began and which group it last moved up from: an SLA move
 * (a breach to another group) names the group that missed its deadline; a breach at the top of
 * the chain or a re-show keeps what was there; a new trip (after a decision) starts afresh.
 */
function foldTrip(summary: ChainSummary, entry: Escalated): void {
  const previous = summary.latest;
  const open = previous !== null && summary.latestDecision === null;
  summary.askedAtMs ??= entry.at_ms;
  if (!open) {
    summary.waitingSinceMs = entry.at_ms;
    summary.movedFrom = null;
    return;
  }
  summary.waitingSinceMs ??= entry.at_ms;
  if (entry.breach && previous.group !== entry.group) summary.movedFrom = { group: previous.group, dueMs: previous.due_ms, atMs: entry.at_ms };
}

/** The chain's state from its summary; equal to `chainState` of its entries. */
export function summaryState(s: ChainSummary): ChainState {
  if (s.openDispatch) return 'SENDING';
  if (s.committed) return 'DONE';
  if (s.closedBy) return 'CLOSED';
  if (s.latest && !s.latestDecision) return 'ESCALATED';
  if (s.owesSinceDecision) return 'NEEDS_ESCALATION';
  return s.latest ? 'APPROVED' : 'NEW';
}

/** The queue item for an escalated chain, or null. */
export function summaryItem(s: ChainSummary): InboxItem | null {
  const e = s.latest;
  if (!e || !s.request || summaryState(s) !== 'ESCALATED') return null;
  return {
    effect_id: s.effectId,
    request: s.request,
    state: 'ESCALATED',
    reason: e.reason,
    why: e.why,
    detail: e.detail,
    // Only when the escalation kept them; an older one's are worded by `openItem` (rule-words-before.ts).
    ...(e.failed_rules === undefined ? {} : { failed_rules: e.failed_rules }),
    facts: e.facts,
    changes: e.changes,
    repairs: e.repairs,
    route: e.route,
    group: e.group,
    routed_to: e.routed_to,
    level: e.level,
    escalated_at_ms: e.at_ms,
    due_ms: e.due_ms,
    breach: s.breached,
    missed_due_ms: s.breached && e.due_ms === null ? s.missedDueMs : null,
    escalation: e.hash,
    asked_at_ms: s.askedAtMs ?? e.at_ms,
    waiting_since_ms: s.waitingSinceMs ?? e.at_ms,
    moved_from: s.movedFrom === null ? null : { group: s.movedFrom.group, due_ms: s.movedFrom.dueMs, at_ms: s.movedFrom.atMs },
    ...(approvalsRequired(e) > 1 ? { approvals: { required: approvalsRequired(e), given: [...s.latestApprovers].map(([by, at_ms]) => ({ by, at_ms })) } } : {}),
  };
}

/** How a finished or closed chain reads in the done and closed lists. */
export function summaryHistory(s: ChainSummary): HistoryItem | null {
  const state = summaryState(s);
  if (!s.request || (state !== 'DONE' && state !== 'CLOSED' && !s.ambiguous)) return null;
  const decider = s.closedBy ?? s.latestDecision;
  const refund = s.committed ? refundOf(s.committed) : null;
  const final = finalStatus(s.confirmations);
  return {
    effect_id: s.effectId,
    request: s.request,
    state,
    status: s.committed ? committedStatus(s.committed) : s.ambiguous ? 'AMBIGUOUS' : s.closedBy?.decision === 'repair' ? 'REPAIRED' : 'REJECTED',
    decided_by: decider ? decider.by : isPolicyLease(s.lastDispatchLease) ? 'policy' : null,
    approved_by: approversOf(s),
    currency: s.currency,
    group: s.latest ? s.latest.group : null,
    refund,
    confirmed: final === null ? null : final === 'succeeded' ? true : final === 'failed' || final === 'canceled' ? false : 'pending',
    updated_at_ms: s.updatedAtMs,
    // Named as the ledger names it, from the same facts: a list shows no refusal for good (never done or closed).
    outcome: outcomeOf({
      sending: s.openDispatch,
      committed: s.committed !== null,
      failedAtStripe: isFailedAtStripe(final),
      ambiguous: s.ambiguous,
      closing: s.closedBy?.decision ?? null,
      refusedForGood: false,
    }),
    reject_reason: s.closedBy?.decision === 'reject' ? (s.closedBy.reason ?? null) : null,
  };
}

/** The refund id a COMMITTED names. */
export function refundOf(commit: Committed): string | null {
  if (isJsonObject(commit.result) && typeof commit.result.refund === 'string') return commit.result.refund;
  return typeof commit.found === 'string' ? commit.found : null;
}

/** Where a chain stands, as `statusOf` needs it: from its entries (`currentStatus`) or from its fold (the ledger). */
export interface StatusFacts {
  /** A DISPATCHED not yet closed. */
  sending: boolean;
  committed: Committed | null;
  ambiguous: boolean;
  state: ChainState;
  /** The status of the refusal that explains a chain not escalated yet, if any. */
  refusal: () => string | null;
}

/** The status an agent is told for a chain: one rule list for the answers, the exports and the ledger. */
export function statusOf(facts: StatusFacts): Status {
  if (facts.sending) return 'IN_FLIGHT';
  if (facts.committed) return committedStatus(facts.committed);
  if (facts.ambiguous) return 'AMBIGUOUS';
  switch (facts.state) {
    case 'CLOSED':
      return 'CLOSED';
    case 'ESCALATED':
    case 'NEEDS_ESCALATION':
      return 'QUEUED';
    case 'APPROVED':
      return 'APPROVED';
    default: {
      const refusal = facts.refusal();
      return refusal !== null && isStatus(refusal) ? refusal : 'QUEUED';
    }
  }
}

/** The status an agent is told for a commit, by how it landed. */
export function committedStatus(commit: Committed): 'COMMITTED' | 'COMMITTED_BY_RETRY' | 'COMMITTED_ON_QUERY' | 'REAPPLIED_AFTER_QUERY' {
  switch (commit.via) {
    case 'retry-idempotent':
      return 'COMMITTED_BY_RETRY';
    case 'recovery-query':
    case 'failed-but-landed':
      return 'COMMITTED_ON_QUERY';
    case 'recovery-reapply':
      return 'REAPPLIED_AFTER_QUERY';
    default:
      return 'COMMITTED';
  }
}

