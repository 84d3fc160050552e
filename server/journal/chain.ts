import type { Change, Decided, Entry, EntryKind, EntryOf, Escalated, Repair } from '../../shared/entries.ts';
import { isKind } from './shapes.ts';
import { isJsonObject, type Json, jsonEqual } from '../../shared/json.ts';
import { whyFor } from '../../shared/statuses.ts';

/** Pure predicates over one effect's entries, in order. Nothing here reads or writes. */

/** True when a DISPATCHED is not yet closed by COMMITTED, AMBIGUOUS or a resolving REFUSED. */
export function isOpenDispatch(chain: readonly Entry[]): boolean {
  let open = false;
  for (const entry of chain) {
    if (entry.kind === 'DISPATCHED') open = true;
    else if (closesDispatch(entry)) open = false;
  }
  return open;
}

/** True for the entries that settle an open dispatch. CONFIRMED never does. */
export function closesDispatch(entry: Entry): boolean {
  return entry.kind === 'COMMITTED' || entry.kind === 'AMBIGUOUS' || (entry.kind === 'REFUSED' && entry.resolves === true);
}

/** The payload bound by the first PROPOSED, or undefined when nothing is bound yet. */
export function recordedEffect(chain: readonly Entry[]): Json | undefined {
  return firstOf(chain, 'PROPOSED')?.effect;
}

/** The first entry of a kind, or undefined. */
export function firstOf<K extends EntryKind>(chain: readonly Entry[], kind: K): EntryOf<K> | undefined {
  for (const entry of chain) if (isKind(entry, kind)) return entry;
  return undefined;
}

/** Every entry of a kind, in order. */
export function allOf<K extends EntryKind>(chain: readonly Entry[], kind: K): EntryOf<K>[] {
  return chain.filter((entry): entry is EntryOf<K> => isKind(entry, kind));
}

/**
 * 'conflicting_payload' when the chain is bound to another payload than `effect`, or (when the
 * caller names its request) to another request; null when it is unbound or bound to these.
 */
export function bindingConflict(chain: readonly Entry[], effect: Json, request?: Json): 'conflicting_payload' | null {
  const bound = recordedEffect(chain);
  if (bound !== undefined && !jsonEqual(bound, effect)) return 'conflicting_payload';
  if (request === undefined) return null;
  const boundRequest = allOf(chain, 'PROPOSED').find((e) => e.request !== undefined)?.request;
  return boundRequest === undefined || jsonEqual(boundRequest, request) ? null : 'conflicting_payload';
}

/** True when the chain holds an entry of this kind. */
export function has(chain: readonly Entry[], kind: Entry['kind']): boolean {
  return chain.some((e) => e.kind === kind);
}

/** The last entry of a kind, or undefined. */
export function lastOf<K extends EntryKind>(chain: readonly Entry[], kind: K): EntryOf<K> | undefined {
  for (let i = chain.length - 1; i >= 0; i--) {
    const entry = chain[i]!;
    if (isKind(entry, kind)) return entry;
  }
  return undefined;
}

/** How many distinct people must approve an escalation: what it pinned when routed, else one. */
export function approvalsRequired(escalation: Escalated): number {
  return escalation.approvals_required ?? 1;
}

/** The approvals of an escalation, in order, one per person (a later one by the same person is not another). */
export function approvalsOf(chain: readonly Entry[], escalation: Escalated): Decided[] {
  const seen = new Set<string>();
  const approvals: Decided[] = [];
  for (const e of allOf(chain, 'DECIDED')) {
    if (e.escalation !== escalation.hash || e.decision !== 'approve' || seen.has(e.by)) continue;
    seen.add(e.by);
    approvals.push(e);
  }
  return approvals;
}

/**
 * The decision that answers `escalation`: the first reject or repair naming it, or the approval
 * that brings its distinct approvers to the count it needs (the first approval, when it needs
 * one), whichever comes first. An approval short of the count answers nothing.
 */
export function answerOf(chain: readonly Entry[], escalation: Escalated): Decided | undefined {
  const needed = approvalsRequired(escalation);
  const approvers = new Set<string>();
  for (const e of allOf(chain, 'DECIDED')) {
    if (e.escalation !== escalation.hash) continue;
    if (e.decision !== 'approve') return e;
    approvers.add(e.by);
    if (approvers.size >= needed) return e;
  }
  return undefined;
}

/** The latest escalation and the decision that answers it (`answerOf`), if any. */
export function latestEscalation(chain: readonly Entry[]): { escalation?: Escalated; decision?: Decided } {
  const escalation = lastOf(chain, 'ESCALATED');
  if (!escalation) return {};
  const decision = answerOf(chain, escalation);
  return decision ? { escalation, decision } : { escalation };
}

/**
 * The last decision a person made on the chain: the last entry that answered one of its
 * escalations. A first approval of two is none: it decided nothing, the escalation stays open.
 */
export function lastDecision(chain: readonly Entry[]): Decided | undefined {
  let last: Decided | undefined;
  for (const escalation of allOf(chain, 'ESCALATED')) {
    const answer = answerOf(chain, escalation);
    if (answer && (!last || chain.indexOf(answer) > chain.indexOf(last))) last = answer;
  }
  return last;
}

/** The first decision that closed the effect for good (a reject or an accepted repair). */
export function closingDecision(chain: readonly Entry[]): Decided | undefined {
  return allOf(chain, 'DECIDED').find((e) => e.decision === 'reject' || e.decision === 'repair');
}

/** True when a settled target_error still blocks: no escalation came after the last one. */
function targetErrorBlocks(chain: readonly Entry[]): boolean {
  let lastError = -1;
  chain.forEach((e, i) => {
    if (e.kind === 'REFUSED' && e.code === 'target_error' && e.resolves === true) lastError = i;
  });
  if (lastError < 0) return false;
  return !chain.slice(lastError + 1).some((e) => e.kind === 'ESCALATED');
}

/**
 * True when the lease is a person's approval of the latest escalation, recorded by a DECIDED
 * with the same person, time and group, and the premises are exactly the facts that person saw.
 * For an escalation that needs more than one approver, the lease also carries the earlier
 * approvals, each one recorded, and together they name as many distinct people as it needs.
 */
function approvalCoversSend(chain: readonly Entry[], lease: Json, premises: Json): boolean {
  const { escalation, decision } = latestEscalation(chain);
  if (!escalation) return true;
  if (!isJsonObject(lease) || !decision || decision.decision !== 'approve') return false;
  const covers =
    lease.escalation === escalation.hash &&
    decision.by === lease.by &&
    decision.at_ms === lease.at_ms &&
    lease.group === escalation.group &&
    jsonEqual(premises, escalation.facts);
  return covers && coApprovalsHold(chain, escalation, decision, lease.co_approvals);
}

/** True when the lease's other approvals are recorded approvals of the escalation, by distinct people reaching its count. */
function coApprovalsHold(chain: readonly Entry[], escalation: Escalated, decision: Decided, given: Json | undefined): boolean {
  const needed = approvalsRequired(escalation);
  if (given === undefined) return needed <= 1;
  if (!Array.isArray(given)) return false;
  const recorded = approvalsOf(chain, escalation);
  const people = new Set([decision.by]);
  for (const co of given) {
    if (!isJsonObject(co) || typeof co.by !== 'string' || people.has(co.by)) return false;
    if (!recorded.some((a) => a.by === co.by && a.at_ms === co.at_ms)) return false;
    people.add(co.by);
  }
  return people.size >= needed;
}

/** Why a dispatch may not happen now, first match wins (core §2.4). */
export const DISPATCH_BLOCKERS = ['in_flight', 'committed', 'ambiguous', 'conflicting_payload', 'closed', 'target_error', 'awaiting_decision'] as const;
/** One reason a dispatch may not happen now. */
export type DispatchBlocker = (typeof DISPATCH_BLOCKERS)[number];

/** True for a blocker the dispatch rule gives (a conditional append answers plain strings). */
export function isDispatchBlocker(value: string): value is DispatchBlocker {
  return DISPATCH_BLOCKERS.some((known) => known === value);
}

/** The dispatch rule, checked inside the journal's write lock (core §2.4). */
export function dispatchBlocker(chain: readonly Entry[], effect: Json, lease: Json, premises: Json): DispatchBlocker | null {
  if (isOpenDispatch(chain)) return 'in_flight';
  if (has(chain, 'COMMITTED')) return 'committed';
  if (has(chain, 'AMBIGUOUS')) return 'ambiguous';
  const bound = recordedEffect(chain);
  if (bound !== undefined && !jsonEqual(bound, effect)) return 'conflicting_payload';
  if (closingDecision(chain)) return 'closed';
  if (targetErrorBlocks(chain)) return 'target_error';
  if (!approvalCoversSend(chain, lease, premises)) return 'awaiting_decision';
  return null;
}

/** The status an entry stands for: `REFUSED:<code>` for refusals, else its kind. */
export function entryStatus(entry: Entry): string {
  if (entry.kind !== 'REFUSED') return entry.kind;
  return typeof entry.code === 'string' ? `REFUSED:${entry.code}` : 'REFUSED';
}

/** What explains a refused or unknowable effect to a person. */
export interface Explanation {
  effect_id: string;
  status: string;
  reason: string;
  why: string;
  changes: Change[];
  repairs: Repair[];
}

/**
 * The refusal or ambiguity that explains an effect, or null when nothing does (or it landed
 * afterwards). An ambiguity outranks any later refusal; refusals that only say "waiting" or
 * "closed" explain nothing new.
 */
export function explainChain(chain: readonly Entry[], of: string | null = null): Explanation | null {
  const wanted = of ?? (has(chain, 'AMBIGUOUS') ? 'AMBIGUOUS' : null);
  for (let i = chain.length - 1; i >= 0; i--) {
    const entry = chain[i]!;
    if (entry.kind !== 'REFUSED' && entry.kind !== 'AMBIGUOUS') continue;
    const status = entryStatus(entry);
    if (wanted !== null && status !== wanted) continue;
    if (wanted === null && (entry.code === 'awaiting_decision' || entry.code === 'closed')) continue;
    if (chain.slice(i + 1).some((e) => e.kind === 'COMMITTED')) return null;
    const reason = typeof entry.code === 'string' ? entry.code : entry.kind === 'AMBIGUOUS' ? 'ambiguous' : 'refused';
    return {
      effect_id: entry.effect_id,
      status,
      reason,
      why: whyFor(reason),
      changes: entry.changes ?? [],
      repairs: entry.kind === 'REFUSED' ? (entry.repairs ?? []) : [],
    };
  }
  return null;
}
