import type { RefundAnswer, RequestPayload } from '../../shared/api.ts';
import { type ConflictingPayloadError, type InterlockClientError, type RefundResult, type VerifyReport, waitingForOf } from '@interlock-placeholder/client';
import type { Change, Repair } from '../../shared/entries.ts';
import type { Json } from '../../shared/json.ts';
import { limits } from '../../shared/limits.ts';
import { LANDED_STATUSES, PLAIN_STATUSES, type PlainStatus, type Status, type WaitingFor } from '../../shared/statuses.ts';
import { formatCents } from '../gate/premises.ts';

/**
 * The plain words a model reads in a tool result: what happened, what changed, the repair, and
 * what to do next. Amounts are in the payment's currency the answer names ("$70.00", "¥7,000"), the
 * way the server words its own reasons; a payload with no currency gives its amount as sent.
 */

/** How each plain status opens a result; a missing status does not compile. */
const HEADLINES: Record<PlainStatus, string> = {
  COMMITTED: 'Sent',
  COMMITTED_BY_RETRY: 'Sent',
  COMMITTED_ON_QUERY: 'Sent (found at Stripe)',
  REAPPLIED_AFTER_QUERY: 'Sent',
  DUPLICATE_IGNORED: 'Already sent; nothing was sent twice',
  IN_FLIGHT: 'Being sent; the outcome is not known yet',
  AMBIGUOUS: 'Outcome unknown; it is never sent again',
  // What a QUEUED request waits for is told apart by `waiting_for` (QUEUED_HEADLINES); this is a person's.
  QUEUED: 'Waiting for a person',
  APPROVED: 'Approved, being sent',
  PARTLY_APPROVED: 'Approved by one person; waiting for a second approver',
  REJECTED: 'Rejected; never sent',
  CLOSED: 'Closed; never sent',
  SUPERSEDED: 'Superseded',
  ALREADY_DECIDED: 'Already decided',
  NOT_SENT: 'Not sent',
};

/** How a QUEUED answer opens, by what it waits for; a missing kind of wait does not compile. */
const QUEUED_HEADLINES: Record<WaitingFor, string> = {
  person: 'Waiting for a person',
  stripe: 'Waiting its turn to reach Stripe; no person is involved',
};

/** Facts the Stripe refunds target records, as a person reads them (web/src/components/FactTable.tsx). */
const FACT_WORDS: Readonly<Record<string, string>> = {
  amount_received: 'the amount paid',
  refunded_by_others: 'the amount already refunded',
  refunded_outside: 'the amount refunded outside Interlock',
  disputed: 'disputed',
  currency: 'the currency',
};
/** Facts that are amounts in the smallest currency unit. */
const MONEY_FACTS: ReadonlySet<string> = new Set(['amount_received', 'refunded_by_others', 'refunded_outside']);

const LANDED: ReadonlySet<string> = new Set(LANDED_STATUSES);

function headlineOf(answer: RefundAnswer): string {
  const { status } = answer;
  if (status === 'QUEUED') return QUEUED_HEADLINES[waitingForOf(answer) ?? 'person'];
  if (status.startsWith('REFUSED:')) return 'Refused';
  if (status.startsWith('UNRESOLVED:')) return 'Not settled yet; recovery will try again';
  const plain = PLAIN_STATUSES.find((known) => known === status);
  return plain === undefined ? status : HEADLINES[plain];
}

function factValue(field: string, value: Json, currency: string | null): string {
  if (MONEY_FACTS.has(field) && typeof value === 'number') return formatCents(value, currency);
  if (typeof value === 'boolean') return value ? 'yes' : 'no';
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** One change, its amounts in the payment's currency: `the amount already refunded was $0.00, now $30.00`. */
export function describeChange(change: Change, currency: string | null = null): string {
  const name = FACT_WORDS[change.field] ?? change.field;
  return `${name} was ${factValue(change.field, change.was, currency)}, now ${factValue(change.field, change.now, currency)}`;
}

/**
 * One repair and what acting on it means: while a person has the request they may accept it;
 * otherwise the agent may ask for the repaired refund, which is another decision with its own id.
 */
export function describeRepair(repair: Repair, status: Status, currency: string | null = null, waitingFor: WaitingFor = 'person'): string {
  const amount = 'amount' in repair.set ? repair.set.amount : undefined;
  const withPerson = status === 'QUEUED' && waitingFor === 'person';
  if (typeof amount === 'number') {
    return withPerson
      ? `${repair.why}; an approver may accept this repair, which sends ${formatCents(amount, currency)} instead`
      : `${repair.why}; the repair is to ask for ${formatCents(amount, currency)} (amount ${amount}) under a new request_id`;
  }
  return withPerson ? `${repair.why}; an approver may send it as asked` : `${repair.why}; the same refund may be decided again by a person`;
}

/** What to do next: wait while it is not final, look again after a refusal (a person may take it up), else nothing. */
function nextStep(result: RefundResult): string {
  const id = JSON.stringify(result.answer.request_id);
  if (!result.final) return `Not final yet: call wait_for_decision with request_id ${id} to wait for the outcome.`;
  if (result.answer.status.startsWith('REFUSED:')) {
    return `Nothing was sent for this request. A person may be asked to decide it: get_refund with request_id ${id} shows where it stands.`;
  }
  return `This is final: asking again with request_id ${id} answers the same and sends nothing.`;
}

/**
 * The approvals of a refund two people must approve: while it waits, how many of how many and by
 * whom (a first approval is never the decision); once they are all given, who they were. Null when
 * one person decides it, or the server predates the field.
 */
function approvalsLine(answer: RefundAnswer): string | null {
  const approvals = answer.approvals ?? null;
  if (approvals === null) return null;
  const { required, given } = approvals;
  if (given.length >= required) return `Approved by ${given.length} different people: ${given.map((a) => a.by).join(', ')}.`;
  if (answer.status !== 'QUEUED') return null;
  const so = given.length === 0 ? 'none yet' : `${given.length} of ${required} (${given.map((a) => `${a.by} at ${a.at}`).join(', ')})`;
  return `Approvals: ${so}; nothing is sent until ${required} different people have approved.`;
}

/** A refund answer in words: `Refused (REFUSED:stale_premise): … What changed: … Repair: … `; `next` says what to do next. */
export function describeAnswer(result: RefundResult, next = nextStep(result)): string {
  const { answer } = result;
  const lines = [`${headlineOf(answer)} (${answer.status}): ${answer.why}.`];
  if (LANDED.has(answer.status) && answer.refund !== null) lines.push(`Stripe refund: ${answer.refund}.`);
  // An answer from a server that predates `currency` names none: its amounts read as dollars, as they did.
  const currency = answer.currency ?? null;
  if (answer.changes.length > 0) lines.push(`What changed: ${answer.changes.map((change) => describeChange(change, currency)).join('; ')}.`);
  for (const repair of answer.repairs) lines.push(`Repair: ${describeRepair(repair, answer.status, currency, waitingForOf(answer) ?? 'person')}.`);
  const approvals = approvalsLine(answer);
  if (approvals !== null) lines.push(approvals);
  lines.push(next);
  lines.push(`Request ${answer.request_id}, effect ${answer.effect_id}; verify_receipt checks its signed receipt.`);
  return lines.join('\n');
}

/**
 * What one `wait_for_decision` call gave: the answer once final; else that it is still waiting,
 * how long this call waited (and that it waited less than asked, when `askedSeconds` is past the
 * cap), and to call again with the same request_id.
 */
export function describeWait(result: RefundResult & { waitedMs: number }, askedSeconds: number): string {
  if (result.final) return describeAnswer(result);
  const max = limits.mcpWaitSecondsMax;
  const capped = askedSeconds > max ? ` (timeout_seconds ${askedSeconds} is more than one call waits: at most ${max} s)` : '';
  const id = JSON.stringify(result.answer.request_id);
  const again = `Call wait_for_decision again with the same request_id ${id} to keep waiting; one call waits at most ${max} s.`;
  return `Still waiting: ${result.answer.status} after ${Math.round(result.waitedMs / 1000)} s${capped}. It is not final yet.\n${describeAnswer(result, again)}`;
}

function describePayload(payload: RequestPayload): string {
  const parts = [payload.payment_intent, `amount ${payload.amount}`];
  parts.push(payload.reason === undefined ? 'no reason' : `reason ${JSON.stringify(payload.reason)}`);
  parts.push(payload.flags.length === 0 ? 'no flags' : `flags ${payload.flags.join(', ')}`);
  if (payload.context_url !== undefined) parts.push(`context ${payload.context_url}`);
  if (payload.on_behalf_of !== undefined) parts.push(`on behalf of ${payload.on_behalf_of}`);
  return parts.join(', ');
}

/** An error in words: the code first, what it means for the request, and what is safe to do. */
export function describeError(error: InterlockClientError): string {
  switch (error.code) {
    case 'network_error':
      return `network_error: ${error.message}. Nothing is known about the request: sending it again with the same request_id is safe.`;
    case 'timeout':
    case 'aborted':
      return `${error.code}: ${error.message}. Sending it again with the same request_id is safe.`;
    case 'unexpected_response':
      return `unexpected_response: ${error.message}. Something other than Interlock answered; sending it again with the same request_id is safe.`;
    case 'conflicting_payload':
      return conflictText(error);
    case 'currency_mismatch':
      return (
        `currency_mismatch (HTTP ${error.status}): ${error.message}. ` +
        "Work the amount out again in the payment's currency, in its smallest unit, and ask again with that currency; nothing was refunded."
      );
    case 'rate_limited': {
      const wait = error.retryAfterMs === null ? 'in a moment' : `in ${Math.ceil(error.retryAfterMs / 1000)} s`;
      return `rate_limited (HTTP ${error.status}): ${error.message}. Nothing was written; send the same request again ${wait}.`;
    }
    default:
      return `${error.code} (HTTP ${error.status}): ${error.message}`;
  }
}

function conflictText(error: ConflictingPayloadError): string {
  return [
    `conflicting_payload (HTTP ${error.status}): ${error.message}`,
    `Recorded: ${describePayload(error.recorded)}.`,
    `Offered: ${describePayload(error.offered)}.`,
    'A retry must send the recorded payload; a different refund needs a new request_id.',
  ].join('\n');
}

/** A verification report in words: valid or not, what it proves, and each problem. */
export function describeReport(report: VerifyReport): string {
  const effect = report.effect_id ?? 'unknown';
  if (!report.valid) {
    const problems = report.problems.map((problem, i) => `${i + 1}. ${problem.code}: ${problem.message}`);
    return [`Not valid: the receipt of effect ${effect} fails ${problems.length} check(s).`, ...problems].join('\n');
  }
  const proven = [
    report.signed === true ? `signed by key ${report.key_id}` : 'not signature-checked (no key)',
    report.happened === true ? (report.happened_once ? 'the refund happened once' : 'the refund happened') : `happened: ${String(report.happened)}`,
  ];
  if (report.authorized_when_fired === true) proven.push('under live authority when sent');
  if (report.assumptions_held === true) proven.push('on facts that still held');
  // A two-approver send names both people, the earlier first.
  const approvers = report.approvers && report.approvers.length > 1 ? report.approvers : report.approved_by === null ? [] : [report.approved_by];
  if (approvers.length > 0) proven.push(`approved by ${approvers.length === 1 ? approvers[0] : `${approvers.slice(0, -1).join(', ')} and ${approvers.at(-1)}`}`);
  return `Valid: the receipt of effect ${effect} verifies: ${proven.join(', ')}.`;
}
