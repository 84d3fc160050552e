import { isJsonObject, type Json, type JsonObject, jsonEqual } from '../json.ts';
import { canonical } from './canonical.ts';
import { finalStatus } from './confirmations.ts';
import {
  type ConfirmationItem,
  type EscalationHistoryItem,
  sentRefund,
  VERIFY_PROBLEM_MESSAGES,
  type VerifyProblem,
  type VerifyProblemCode,
} from './report.ts';

// The semantic passes of receipt verification (spec §7.4 to §7.7): what the entries prove, with
// no hashing and no keys, so they run the same in a browser and on the server. verifyReceipt
// (verify.ts) runs them over a whole receipt for a report; the server's ChainCheck feeds the
// per-entry checks here one entry at a time for a `valid` alone.

/** A send the claims must hold for: the checks recorded when it fired, and the payload it carried. */
export interface Send {
  index: number;
  checks: Json;
  effect: Json;
}

/** Where the passes report what they find: a full list for a report, or a count for a check that only needs `valid`. */
export interface ProblemSink {
  readonly count: number;
  add(code: VerifyProblemCode, message?: string): void;
  at(index: number, entry: JsonObject | undefined, code: VerifyProblemCode, message?: string): void;
}

/** Problems in the order they are found; `valid` is this list being empty. */
export class Problems implements ProblemSink {
  readonly list: VerifyProblem[] = [];

  get count(): number {
    return this.list.length;
  }

  /** A problem with the whole receipt. */
  add(code: VerifyProblemCode, message: string = VERIFY_PROBLEM_MESSAGES[code]): void {
    this.list.push({ code, message });
  }

  /** A problem with one entry, named by its index and kind. */
  at(index: number, entry: JsonObject | undefined, code: VerifyProblemCode, message = VERIFY_PROBLEM_MESSAGES[code]): void {
    const kind = typeof entry?.kind === 'string' ? entry.kind : undefined;
    const where = `Entry ${index} (${kind ?? 'no kind'})`;
    this.list.push({ code, entry: index, ...(kind === undefined ? {} : { kind }), message: `${where} ${message}` });
  }
}

/** Send pass (§7.4): one walk that finds every send, whether each was allowed to fire, and what settled it. */
export function walkSends(entries: readonly JsonObject[], problems: ProblemSink) {
  const sends: Send[] = [];
  let once = true;
  let open = false;
  let authorizedSeen = false;
  let rejected = false;
  let effect: Json = {};
  let refused: Json = null;
  let evidence: Json = null;
  let atRecovery: Json = null;
  for (const [index, entry] of entries.entries()) {
    const flag = (code: VerifyProblemCode) => problems.at(index, entry, code);
    const resolves = entry.kind === 'REFUSED' && entry.resolves === true;
    if (entry.kind === 'ESCALATED') rejected = false;
    if (entry.kind === 'AUTHORIZED') authorizedSeen = true;
    if (entry.kind === 'REFUSED') refused = entry.reason ?? null;
    if (Object.hasOwn(entry, 'rechecked')) atRecovery = entry.rechecked ?? null;
    if (entry.kind === 'DISPATCHED') {
      if (open) flag('send_while_open');
      if (!authorizedSeen) flag('send_without_authorization');
      if (rejected) flag('send_after_target_failure');
      once &&= !open && !rejected;
      open = true;
      effect = entry.effect ?? {};
      sends.push({ index, checks: entry.checks ?? {}, effect });
    }
    if (entry.kind === 'COMMITTED') {
      if (!open) flag('orphan_commit');
      // A resend under the same idempotency key is another send, attested by what recovery rechecked.
      const resent = entry.via === 'retry-idempotent' || entry.via === 'recovery-reapply';
      if (resent) sends.push({ index, checks: entry.rechecked ?? {}, effect });
      evidence = truthy(entry.result) ? (entry.result ?? null) : (entry.found ?? null);
    }
    if (resolves && open) {
      rejected ||= entry.code === 'target_error';
      // The refused send never landed, so its checks attest to nothing that fired.
      sends.pop();
    }
    if (entry.kind === 'COMMITTED' || entry.kind === 'AMBIGUOUS' || resolves) open = false;
  }
  return { sends, once, refused, evidence, atRecovery, openAtEnd: open };
}

/** People pass (§7.5): a send under escalation carries the routed person's approval of the latest escalation. */
export function walkPeople(entries: readonly JsonObject[], problems: ProblemSink) {
  const before = problems.count;
  const escalations: EscalationHistoryItem[] = [];
  const historyByHash = new Map<Json, EscalationHistoryItem>();
  const tally = new DecisionTally();
  const answerTo = (escalation: Json | undefined) => tally.answerTo(escalation);
  let latest: JsonObject | null = null;
  let closed = false;
  let sent: Json = null;
  let landed: Json | undefined;
  for (const [index, entry] of entries.entries()) {
    if (entry.kind === 'ESCALATED') {
      latest = entry;
      tally.escalated(entry);
      const item = escalationItem(entry);
      escalations.push(item);
      historyByHash.set(entry.hash ?? null, item);
    } else if (entry.kind === 'DECIDED') {
      checkDecision(index, entry, latest, tally.decide(entry), problems);
      const item = historyByHash.get(entry.escalation ?? null);
      if (item !== undefined && item.decision === null) {
        item.decision = { by: entry.by ?? null, decision: entry.decision ?? null, at_ms: entry.at_ms ?? null };
      }
      closed ||= entry.decision === 'reject' || entry.decision === 'repair';
    } else if (entry.kind === 'DISPATCHED') {
      sent = entry.lease ?? null;
      checkPersonSend(index, entry, { latest, closed, answer: answerTo(latest?.hash) }, problems);
      if (latest !== null) checkCoApprovals(index, entry, latest, tally.approvalsOf(latest.hash), problems);
    } else if (entry.kind === 'COMMITTED' && landed === undefined) {
      landed = sent;
    }
  }
  const approvedBy = isJsonObject(landed) && typeof landed.by === 'string' && landed.by !== 'policy' ? landed.by : null;
  const coApprovers = isJsonObject(landed) && Array.isArray(landed.co_approvals) ? landed.co_approvals.flatMap((a) => (isJsonObject(a) && typeof a.by === 'string' ? [a.by] : [])) : [];
  return {
    approved_by: approvedBy,
    // Every approver of a two-approver send, the earlier first; only on such a send.
    ...(approvedBy !== null && coApprovers.length > 0 ? { approvers: [...coApprovers, approvedBy] } : {}),
    approval_verified: problems.count > before ? false : escalations.length > 0 ? true : null,
    escalations,
  };
}

function escalationItem(entry: JsonObject): EscalationHistoryItem {
  return {
    at_ms: entry.at_ms ?? null,
    reason: entry.reason ?? null,
    group: entry.group ?? null,
    routed_to: entry.routed_to ?? null,
    level: entry.level ?? null,
    breach: entry.breach ?? null,
    changes: entry.changes ?? null,
    repairs: Array.isArray(entry.repairs) ? entry.repairs.length : 0,
    decision: null,
  };
}

/**
 * The decisions of a chain by escalation, as they come: which one answers each escalation, and the
 * approvals of a two-approver escalation before the one that brings it to its count.
 */
export class DecisionTally {
  readonly #answered = new Map<string, JsonObject>();
  readonly #approvals = new Map<string, JsonObject[]>();
  readonly #required = new Map<string, number>();

  /** An escalation: how many approvers it needs. */
  escalated(entry: JsonObject): void {
    this.#required.set(canonical(entry.hash ?? null), approvalsRequiredOf(entry));
  }

  /**
   * Count a decision; true when it decides an escalation already answered, or is a person's
   * second approval of one (a person is never two of its approvers).
   */
  decide(entry: JsonObject): boolean {
    const key = canonical(entry.escalation ?? null);
    const earlier = this.#approvals.get(key) ?? [];
    const again = entry.decision === 'approve' && earlier.some((a) => jsonEqual(a.by, entry.by));
    const before = this.#answered.has(key);
    if (before || again) return true;
    if (entry.decision === 'approve' && earlier.length + 1 < (this.#required.get(key) ?? 1)) this.#approvals.set(key, [...earlier, entry]);
    else this.#answered.set(key, entry);
    return false;
  }

  /** The decision that answered an escalation, if any. */
  answerTo(escalation: Json | undefined): JsonObject | undefined {
    return this.#answered.get(canonical(escalation ?? null));
  }

  /** The approvals of an escalation before the one that answered it. */
  approvalsOf(escalation: Json | undefined): JsonObject[] {
    return this.#approvals.get(canonical(escalation ?? null)) ?? [];
  }
}

/** How many distinct people an escalation needs to approve it: what it pinned, else one. */
function approvalsRequiredOf(escalation: JsonObject): number {
  const n = escalation.approvals_required;
  return typeof n === 'number' && Number.isSafeInteger(n) && n > 1 ? n : 1;
}

/**
 * A send of an escalation that needs more than one approver carries, besides the approval that
 * answered it, the earlier approvals of it: each recorded, each by another person, as many as it
 * needs. Their being live when it was sent is what the send's recorded checks attest.
 */
export function checkCoApprovals(index: number, entry: JsonObject, latest: JsonObject, recorded: readonly JsonObject[], problems: ProblemSink): void {
  const needed = approvalsRequiredOf(latest);
  if (needed <= 1) return;
  const lease = entry.lease;
  if (!isJsonObject(lease) || lease.escalation !== latest.hash) return;
  const given = Array.isArray(lease.co_approvals) ? lease.co_approvals : [];
  const people = new Set([canonical(lease.by ?? null)]);
  for (const co of given) {
    const ok = isJsonObject(co) && recorded.some((a) => jsonEqual(a.by, co.by) && jsonEqual(a.at_ms, co.at_ms)) && !people.has(canonical(co.by ?? null));
    if (!ok) break;
    people.add(canonical(isJsonObject(co) ? (co.by ?? null) : null));
  }
  if (people.size < needed || given.length + 1 < needed) problems.at(index, entry, 'approvals_short');
}

/** A decision answers the latest escalation, by a member of the group it was routed to, once. */
export function checkDecision(index: number, entry: JsonObject, latest: JsonObject | null, decidedBefore: boolean, problems: ProblemSink) {
  const members = Array.isArray(entry.members) ? entry.members : [];
  if (latest === null || entry.escalation !== latest.hash) problems.at(index, entry, 'decision_not_for_latest');
  else if (entry.group !== latest.group || !members.includes(entry.by ?? null)) problems.at(index, entry, 'decider_not_routed');
  if (decidedBefore) problems.at(index, entry, 'decided_twice');
}

/** A send after an escalation carries an approval of the latest one, matching its decision, on the facts shown. */
export function checkPersonSend(
  index: number,
  entry: JsonObject,
  state: { latest: JsonObject | null; closed: boolean; answer: JsonObject | undefined },
  problems: ProblemSink,
): void {
  const { latest, answer } = state;
  const lease = entry.lease;
  if (state.closed) problems.at(index, entry, 'sent_after_close');
  if (latest === null) {
    if (isJsonObject(lease) && Object.hasOwn(lease, 'escalation')) problems.at(index, entry, 'cites_missing_escalation');
    return;
  }
  if (!isJsonObject(lease) || lease.escalation !== latest.hash) {
    problems.at(index, entry, 'sent_without_decision');
  } else if (
    answer?.decision !== 'approve' ||
    !jsonEqual(answer.by, lease.by) ||
    !jsonEqual(answer.at_ms, lease.at_ms) ||
    !jsonEqual(answer.group, lease.group)
  ) {
    problems.at(index, entry, 'decision_mismatch');
  }
  if (!jsonEqual(entry.premises, latest.facts)) problems.at(index, entry, 'facts_not_seen_by_approver');
}

/** Confirmation pass (§7.6): what the target itself reported, checked against what was sent and committed. */
export function walkConfirmations(entries: readonly JsonObject[], openAtEnd: boolean, problems: ProblemSink) {
  const refund = sentRefund(entries);
  const refunds = new Set<string>();
  const confirmation: ConfirmationItem[] = [];
  let sent: JsonObject | undefined;
  for (const [index, entry] of entries.entries()) {
    if (entry.kind === 'DISPATCHED') sent = isJsonObject(entry.effect) ? entry.effect : {};
    if (entry.kind !== 'CONFIRMED') continue;
    if (sent === undefined) problems.at(index, entry, 'confirmation_without_send');
    else if (Object.hasOwn(sent, 'amount') && !jsonEqual(sent.amount, entry.amount)) {
      problems.at(index, entry, 'confirmed_amount_mismatch');
    }
    if (refund !== null && entry.refund !== refund) problems.at(index, entry, 'confirmed_other_refund');
    refunds.add(canonical(entry.refund ?? null));
    const { via = null, event = null, refund: confirmed = null, status = null } = entry;
    confirmation.push({ via, event, refund: confirmed, status });
  }
  const multipleRefunds = refunds.size > 1;
  if (multipleRefunds) problems.add('confirmed_multiple_refunds', `The target confirmed ${refunds.size} different refunds for one effect.`);
  const has = (kind: string) => entries.some((entry) => entry.kind === kind);
  const refusedToLand = entries.some((entry) => entry.kind === 'REFUSED' && entry.resolves === true);
  const neverLanded = !openAtEnd && !has('COMMITTED') && !has('AMBIGUOUS') && refusedToLand;
  if (neverLanded && confirmation.some((item) => item.status === 'succeeded')) problems.add('confirmed_never_landed');
  const standing = finalStatus(confirmation.map(({ status }) => (typeof status === 'string' ? status : canonical(status))));
  let confirmedByTarget: boolean | 'pending' | null = standing === null ? null : 'pending';
  if (standing === 'succeeded') confirmedByTarget = true;
  if (standing === 'failed' || standing === 'canceled') confirmedByTarget = false;
  return { confirmedByTarget, confirmation, multipleRefunds };
}

/** Claims (§7.7): happened, once, under live authority, on facts that held, for every send that survived. */
export function judgeClaims(entries: readonly JsonObject[], walk: { sends: readonly Send[]; openAtEnd: boolean }, problems: ProblemSink) {
  const { sends } = walk;
  const commits = entries.filter((entry) => entry.kind === 'COMMITTED').length;
  if (commits > 1) problems.add('multiple_commits', `The receipt has ${commits} COMMITTED entries; an effect commits at most once.`);
  const ambiguous = entries.some((entry) => entry.kind === 'AMBIGUOUS');
  for (const send of sends) if (!leaseHeld(send)) problems.at(send.index, entries[send.index], 'lease_not_attested');
  for (const send of sends) if (!premisesHeld(send)) problems.at(send.index, entries[send.index], 'premises_not_attested');
  return {
    happened: commits > 0 ? true : ambiguous || walk.openAtEnd ? ('unknown' as const) : false,
    multipleCommits: commits > 1,
    authorized: sends.length === 0 ? null : sends.every(leaseHeld),
    assumptionsHeld: sends.length === 0 ? null : sends.every(premisesHeld),
  };
}

/** The lease was live, unused elsewhere, unrevoked and large enough for the amount when the send fired. */
export function leaseHeld({ checks, effect }: Send): boolean {
  if (!isJsonObject(checks) || checks.lease_live !== true || truthy(checks.use_problems)) return false;
  const lease = checks.lease;
  if (!isJsonObject(lease)) return true;
  if (truthy(lease.problems) || (lease.revoked !== undefined && lease.revoked !== null)) return false;
  const maxCents = lease.max_cents;
  if (maxCents === undefined || maxCents === null) return true;
  const amount = isJsonObject(effect) ? effect.amount : undefined;
  // typeof rules out booleans: `true` is never an amount of cents.
  return typeof maxCents === 'number' && typeof amount === 'number' && Number.isInteger(amount) && amount <= maxCents;
}

/** Every premise was evaluated and none was violated: a missing list proves nothing. */
export function premisesHeld({ checks }: Send): boolean {
  return isJsonObject(checks) && Array.isArray(checks.violations) && checks.violations.length === 0;
}

/** Truthiness as the recorded fields mean it: null, false, 0, "" and empty lists or objects say nothing. */
function truthy(value: Json | undefined): boolean {
  if (value === undefined || value === null || value === false || value === 0 || value === '') return false;
  if (Array.isArray(value)) return value.length > 0;
  if (typeof value === 'object') return Object.keys(value).length > 0;
  return true;
}
