import type { DecisionTimes, Scoreboard } from '../../shared/api.ts';
import type { Entry } from '../../shared/entries.ts';

export type { DecisionTimes, Scoreboard } from '../../shared/api.ts';
import { isJsonObject } from '../../shared/json.ts';
import { finalStatus } from '../gate/receipts.ts';
import { verifyReceipt } from '../gate/verify.ts';

/** Reasons that mean a person caught an approval that had gone stale. */
export const STALE_REASONS: ReadonlySet<string> = new Set(['stale_premise', 'approval_expired', 'approver_removed']);
/** Reasons that come from a crash (target_error is a definite answer, not a crash). */
export const CRASH_REASONS: ReadonlySet<string> = new Set(['ambiguous', 'stale_premise_at_recovery', 'lease_at_recovery']);

/** What one chain adds to the figures; the board is the sum over chains, so it can be kept up to date chain by chain. */
export interface ChainFigures {
  /** When the request was first made, on the application clock (null for chains from before it was recorded). */
  requestedAtMs: number | null;
  /** Every group the chain was routed to. */
  groups: string[];
  root: boolean;
  cleared: boolean;
  clearedVerified: boolean;
  sentAfterPerson: boolean;
  committed: boolean;
  rejected: number;
  closedByRepair: number;
  repairsAccepted: number;
  open: boolean;
  escalated: boolean;
  reasons: string[];
  staleCaught: number;
  crashToPerson: number;
  repairsSuggested: number;
  breachesByGroup: Record<string, number>;
  confirmed: boolean;
  waitsMs: number[];
}

/** Python's round-half-even to 3 places, as the published share was computed. */
export function roundShare(value: number): number {
  const scaled = value * 1000;
  const floor = Math.floor(scaled);
  const diff = scaled - floor;
  const rounded = diff > 0.5 || (diff === 0.5 && floor % 2 === 1) ? floor + 1 : floor;
  return rounded / 1000;
}

/** The median, p90 (`waits[ceil(0.9 n) - 1]`) and max of sorted waits. */
export function decisionTimes(sortedWaitsMs: readonly number[]): DecisionTimes {
  const n = sortedWaitsMs.length;
  if (n === 0) return { n, median_ms: null, p90_ms: null, max_ms: null };
  const mid = Math.floor(n / 2);
  const median = n % 2 === 1 ? sortedWaitsMs[mid]! : (sortedWaitsMs[mid - 1]! + sortedWaitsMs[mid]!) / 2;
  return { n, median_ms: median, p90_ms: sortedWaitsMs[Math.ceil(0.9 * n) - 1]!, max_ms: sortedWaitsMs[n - 1]! };
}

/** Who accepted the repair a child request carries out, keyed by `repairKey`. */
export type Repairers = ReadonlyMap<string, string>;

/** The key of a request for the repairer map: its agent (if any) and id. */
export function repairKey(request: Record<string, unknown> | null, requestId: unknown): string {
  return `${String(request?.agent ?? '')}/${String(requestId)}`;
}

/** Record the repairers a chain's repair decisions name. */
export function collectRepairers(chain: readonly Entry[], into: Map<string, string>): void {
  const first = chain[0];
  const request = first && isJsonObject(first.request) ? first.request : null;
  for (const e of chain) {
    if (e.kind === 'DECIDED' && e.decision === 'repair' && isJsonObject(e.repair)) into.set(repairKey(request, e.repair.request_id), String(e.by));
  }
}

/** The figures of one chain owned by `inboxName`, or null when the chain is not the inbox's. */
export function chainFigures(chain: readonly Entry[], inboxName: string, repairers: Repairers = new Map()): ChainFigures | null {
  const first = chain[0];
  if (first?.kind !== 'PROPOSED' || first.agent !== inboxName) return null;
  const request = isJsonObject(first.request) ? first.request : null;
  const root = request === null || request.repair_of === undefined;
  const dispatches = chain.filter((e) => e.kind === 'DISPATCHED');
  const committedAt = chain.findIndex((e) => e.kind === 'COMMITTED');
  const committed = committedAt >= 0;
  const hasEscalation = chain.some((e) => e.kind === 'ESCALATED');
  const cleared =
    root && committed && !hasEscalation && dispatches.length > 0 && dispatches.every((d) => isJsonObject(d.lease) && d.lease.by === 'policy');
  const lastSendBeforeCommit = committed ? chain.slice(0, committedAt).findLast((e) => e.kind === 'DISPATCHED') : undefined;
  const sendLease = lastSendBeforeCommit?.lease;
  const figures: ChainFigures = {
    requestedAtMs: typeof first.at_ms === 'number' ? first.at_ms : null,
    groups: [...new Set(chain.filter((e) => e.kind === 'ESCALATED').map((e) => String(e.group)))],
    root,
    cleared,
    clearedVerified: cleared && verifyReceipt({ effect_id: first.effect_id, entries: chain }).valid,
    sentAfterPerson: committed && isJsonObject(sendLease) && sendLease.by !== 'policy',
    committed,
    rejected: 0,
    closedByRepair: 0,
    repairsAccepted: 0,
    open: false,
    escalated: hasEscalation,
    reasons: [],
    staleCaught: 0,
    crashToPerson: 0,
    repairsSuggested: 0,
    breachesByGroup: {},
    confirmed: finalStatus(chain.filter((e) => e.kind === 'CONFIRMED').map((e) => String(e.status))) === 'succeeded',
    waitsMs: [],
  };
  const repairer = request?.repair_of === undefined ? undefined : repairers.get(repairKey(request, request.id));
  walkTrips(chain, repairer, figures);
  return figures;
}

/**
 * Trips to a person: an escalation while none is open starts one (its reason is counted once);
 * more escalations before a decision are the same item shown again (an SLA move, a re-shown
 * repair) and only count breaches; a decision ends it and its wait is measured on `at_ms`.
 */
function walkTrips(chain: readonly Entry[], repairer: string | undefined, figures: ChainFigures): void {
  let sinceMs: number | null = null;
  let approvedEarlier = false;
  let firstDecision = true;
  let latest: Entry | null = null;
  const answered = new Set<string>();
  for (const e of chain) {
    if (e.kind === 'ESCALATED') {
      latest = e;
      if (e.breach === true) figures.breachesByGroup[String(e.group)] = (figures.breachesByGroup[String(e.group)] ?? 0) + 1;
      if (sinceMs !== null) continue;
      sinceMs = Number(e.at_ms);
      const reason = String(e.reason);
      figures.reasons.push(reason);
      if (STALE_REASONS.has(reason) && approvedEarlier) figures.staleCaught += 1;
      if (CRASH_REASONS.has(reason)) figures.crashToPerson += 1;
      if (Array.isArray(e.repairs) && e.repairs.length > 0) figures.repairsSuggested += 1;
    } else if (e.kind === 'DECIDED') {
      if (typeof e.escalation === 'string') answered.add(e.escalation);
      if (e.decision === 'approve') approvedEarlier = true;
      if (e.decision === 'reject') figures.rejected += 1;
      if (e.decision === 'repair') figures.closedByRepair += 1;
      if (e.repair !== null && e.repair !== undefined) figures.repairsAccepted += 1;
      // A repair child approved at once by the person who accepted the repair: nobody waited.
      const repairerApprovedAtOnce = firstDecision && repairer !== undefined && e.by === repairer;
      if (sinceMs !== null && !repairerApprovedAtOnce) figures.waitsMs.push(Number(e.at_ms) - sinceMs);
      sinceMs = null;
      firstDecision = false;
    }
  }
  figures.open = latest !== null && !answered.has(latest.hash);
}

/** Sum the chains' figures into the board. */
export function sumFigures(all: Iterable<ChainFigures>): Scoreboard {
  const board: Scoreboard = {
    requests: 0,
    cleared_no_person: 0,
    cleared_verified: 0,
    no_person_share: 0,
    sent_after_person: 0,
    rejected: 0,
    closed_by_repair: 0,
    repairs_accepted: 0,
    open: 0,
    escalated: 0,
    escalated_by_reason: {},
    stale_approvals_caught: 0,
    crash_to_person: 0,
    repairs_suggested: 0,
    sla_breaches: 0,
    sla_breaches_by_group: {},
    confirmed_by_target: 0,
    unconfirmed_sent: 0,
    time_to_decision: decisionTimes([]),
  };
  const waits: number[] = [];
  for (const f of all) {
    if (f.root) board.requests += 1;
    if (f.cleared) board.cleared_no_person += 1;
    if (f.clearedVerified) board.cleared_verified += 1;
    if (f.sentAfterPerson) board.sent_after_person += 1;
    board.rejected += f.rejected;
    board.closed_by_repair += f.closedByRepair;
    board.repairs_accepted += f.repairsAccepted;
    if (f.open) board.open += 1;
    if (f.escalated) board.escalated += 1;
    for (const reason of f.reasons) board.escalated_by_reason[reason] = (board.escalated_by_reason[reason] ?? 0) + 1;
    board.stale_approvals_caught += f.staleCaught;
    board.crash_to_person += f.crashToPerson;
    board.repairs_suggested += f.repairsSuggested;
    for (const [group, count] of Object.entries(f.breachesByGroup)) {
      board.sla_breaches += count;
      board.sla_breaches_by_group[group] = (board.sla_breaches_by_group[group] ?? 0) + count;
    }
    if (f.confirmed) board.confirmed_by_target += 1;
    else if (f.committed) board.unconfirmed_sent += 1;
    waits.push(...f.waitsMs);
  }
  board.no_person_share = board.requests === 0 ? 0 : roundShare(board.cleared_no_person / board.requests);
  board.time_to_decision = decisionTimes(waits.sort((a, b) => a - b));
  return board;
}

/** The scoreboard of an inbox over a whole journal, computed from scratch. */
export function computeScoreboard(entries: Iterable<Entry>, inboxName: string): Scoreboard {
  const chains = new Map<string, Entry[]>();
  for (const entry of entries) {
    const chain = chains.get(entry.effect_id);
    if (chain) chain.push(entry);
    else chains.set(entry.effect_id, [entry]);
  }
  const repairers = new Map<string, string>();
  for (const chain of chains.values()) collectRepairers(chain, repairers);
  const figures: ChainFigures[] = [];
  for (const chain of chains.values()) {
    const f = chainFigures(chain, inboxName, repairers);
    if (f) figures.push(f);
  }
  return sumFigures(figures);
}
