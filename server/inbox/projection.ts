import type { ChainState, HistoryItem, InboxItem, RequestRecord } from '../../shared/api.ts';
import type { Change, Entry, Repair } from '../../shared/entries.ts';
import { isJsonObject, type JsonObject } from '../../shared/json.ts';
import { finalStatus, statusRank } from '../gate/receipts.ts';
import { closesDispatch } from '../gate/chain.ts';
import { isPolicyLease } from '../gate/leases.ts';
import { owesEscalation } from './state.ts';
import { InboxWorkIndex } from './work.ts';

/** What the views need of one chain, kept up to date entry by entry instead of holding every entry. */
export interface ChainSummary {
  effectId: string;
  agent: string | null;
  request: RequestRecord | null;
  openDispatch: boolean;
  committed: Entry | null;
  ambiguous: boolean;
  closedBy: Entry | null;
  latest: Entry | null;
  latestDecision: Entry | null;
  owesSinceDecision: boolean;
  escalated: boolean;
  /** Every group the chain was ever routed to: who may look at it. */
  groups: Set<string>;
  lastDispatchLease: unknown;
  /** The last refusal or ambiguity, for telling the agent why. */
  lastRefusal: Entry | null;
  confirmations: string[];
  updatedAtMs: number;
}

function emptySummary(effectId: string): ChainSummary {
  return {
    effectId,
    agent: null,
    request: null,
    openDispatch: false,
    committed: null,
    ambiguous: false,
    closedBy: null,
    latest: null,
    latestDecision: null,
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
  if (summary.agent === null && entry.kind === 'PROPOSED') summary.agent = String(entry.agent ?? '');
  if (summary.request === null && entry.kind === 'PROPOSED' && isJsonObject(entry.request)) {
    summary.request = entry.request as unknown as RequestRecord;
  }
  if (entry.kind === 'DISPATCHED') {
    summary.openDispatch = true;
    summary.lastDispatchLease = entry.lease;
  } else if (closesDispatch(entry)) summary.openDispatch = false;
  if (entry.kind === 'COMMITTED' && summary.committed === null) summary.committed = entry;
  if (entry.kind === 'AMBIGUOUS') summary.ambiguous = true;
  if (entry.kind === 'ESCALATED') {
    summary.latest = entry;
    summary.latestDecision = null;
    summary.escalated = true;
    summary.groups.add(String(entry.group));
  }
  if (entry.kind === 'DECIDED') {
    if (summary.closedBy === null && (entry.decision === 'reject' || entry.decision === 'repair')) summary.closedBy = entry;
    if (summary.latest && entry.escalation === summary.latest.hash && summary.latestDecision === null) {
      summary.latestDecision = entry;
      summary.owesSinceDecision = false;
    }
  }
  if (owesEscalation(entry)) {
    summary.owesSinceDecision = true;
    summary.lastRefusal = entry;
  }
  if (entry.kind === 'CONFIRMED' && typeof entry.status === 'string') summary.confirmations.push(entry.status);
  summary.updatedAtMs = typeof entry.at_ms === 'number' ? entry.at_ms : summary.updatedAtMs;
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
    reason: String(e.reason),
    why: String(e.why),
    detail: e.detail ?? null,
    facts: (e.facts as JsonObject) ?? {},
    changes: (e.changes as unknown as Change[]) ?? [],
    repairs: (e.repairs as unknown as Repair[]) ?? [],
    route: String(e.route),
    group: String(e.group),
    routed_to: (e.routed_to as string[]) ?? [],
    level: Number(e.level),
    escalated_at_ms: Number(e.at_ms),
    due_ms: typeof e.due_ms === 'number' ? e.due_ms : null,
    breach: e.breach === true,
    escalation: e.hash,
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
    decided_by: decider ? String(decider.by) : isPolicyLease((s.lastDispatchLease ?? null) as never) ? 'policy' : null,
    group: s.latest ? String(s.latest.group) : null,
    refund,
    confirmed: final === null ? null : final === 'succeeded' ? true : final === 'failed' || final === 'canceled' ? false : 'pending',
    updated_at_ms: s.updatedAtMs,
  };
}

/** The refund id a COMMITTED names. */
export function refundOf(commit: Entry): string | null {
  if (isJsonObject(commit.result) && typeof commit.result.refund === 'string') return commit.result.refund;
  return typeof commit.found === 'string' ? commit.found : null;
}

/** The status an agent is told for a commit, by how it landed. */
export function committedStatus(commit: Entry): 'COMMITTED' | 'COMMITTED_BY_RETRY' | 'COMMITTED_ON_QUERY' | 'REAPPLIED_AFTER_QUERY' {
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

/** Something a view shows changed: before and after, so a live feed can remove as well as add. */
export interface ItemChange {
  effectId: string;
  before: InboxItem | null;
  after: InboxItem | null;
}

/**
 * The inbox's views, rebuilt from the journal alone by folding every entry in order: the queue,
 * the done and closed lists. Only chains whose first PROPOSED is by `inboxName` are shown.
 */
export class InboxProjection {
  readonly chains = new Map<string, ChainSummary>();
  /** Which owned chains can need background work, kept from the same entries. */
  readonly work = new InboxWorkIndex();

  constructor(readonly inboxName: string) {}

  /** Fold an entry and say what changed for the queue. */
  apply(entry: Entry): ItemChange {
    const summary = this.summaryOf(entry.effect_id);
    const before = summaryItem(summary);
    this.foldInto(summary, entry);
    return { effectId: entry.effect_id, before, after: summaryItem(summary) };
  }

  /** Fold an entry when nobody is watching the queue (a replay at start-up): no items are built. */
  fold(entry: Entry): void {
    this.foldInto(this.summaryOf(entry.effect_id), entry);
  }

  private summaryOf(effectId: string): ChainSummary {
    let summary = this.chains.get(effectId);
    if (!summary) {
      summary = emptySummary(effectId);
      this.chains.set(effectId, summary);
    }
    return summary;
  }

  private foldInto(summary: ChainSummary, entry: Entry): void {
    foldEntry(summary, entry);
    this.work.note(summary, this.owned(summary) ? summaryState(summary) : null);
  }

  owned(summary: ChainSummary): boolean {
    return summary.agent === this.inboxName;
  }

  /** The open escalations routed to any of these groups, soonest due first (no deadline last). */
  queue(groups: ReadonlySet<string>): InboxItem[] {
    const items: InboxItem[] = [];
    for (const s of this.chains.values()) {
      const item = this.owned(s) ? summaryItem(s) : null;
      if (item && groups.has(item.group)) items.push(item);
    }
    return items.sort((a, b) => (a.due_ms ?? Number.MAX_SAFE_INTEGER) - (b.due_ms ?? Number.MAX_SAFE_INTEGER) || a.escalated_at_ms - b.escalated_at_ms);
  }

  /** Finished (DONE) or closed chains, newest first, optionally filtered by request id or payment intent. */
  history(kind: 'done' | 'closed', groups: ReadonlySet<string>, search = '', limit = 200): HistoryItem[] {
    const needle = search.trim().toLowerCase();
    const out: HistoryItem[] = [];
    for (const s of this.chains.values()) {
      if (!this.owned(s) || ![...s.groups].some((g) => groups.has(g))) continue;
      const item = summaryHistory(s);
      if (!item || (kind === 'done') !== (item.state === 'DONE')) continue;
      if (needle && !`${item.request.id} ${item.request.payment_intent}`.toLowerCase().includes(needle)) continue;
      out.push(item);
    }
    return out.sort((a, b) => b.updated_at_ms - a.updated_at_ms).slice(0, limit);
  }

  /** Sent refunds Stripe has not confirmed as final yet: what the reconciler may look up. */
  unconfirmedSent(): string[] {
    const out: string[] = [];
    for (const s of this.chains.values()) {
      if (s.committed && !s.confirmations.some((status) => statusRank(status) > 0)) out.push(s.effectId);
    }
    return out;
  }

  /** Effect ids of the chains this inbox owns. */
  ownedIds(): string[] {
    return [...this.chains.values()].filter((s) => this.owned(s)).map((s) => s.effectId);
  }
}
