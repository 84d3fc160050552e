import { type ConflictingPayloadAnswer, type RefundAnswer, type RequestPayload, type RefundRequest, requestPayload } from '../../shared/api.ts';
import type { Decided, Entry, Escalated } from '../../shared/entries.ts';
import { lapsed, type Liveness } from '../inbox/approvals.ts';
import { escalationWhy } from '../../shared/escalation-words.ts';
import { isJsonObject, jsonEqual } from '../../shared/json.ts';
import { codeOf, type Status, type WaitingFor, whyFor } from '../../shared/statuses.ts';
import { allOf, approvalsOf, approvalsRequired, closingDecision, explainChain, has, isOpenDispatch, lastDecision, latestEscalation } from '../journal/chain.ts';
import { sentRefund } from '../receipts/receipts.ts';
import { statusOf } from '../inbox/summary.ts';
import { chainState, waitsItsTurn } from '../inbox/state.ts';
import { formatAmount } from '../../shared/money.ts';
import { formatCents } from '../gate/premises.ts';
import { oneLine } from '../outbox/render.ts';

/** Statuses answered 202: not final yet, so an agent keeps asking. */
const PENDING: ReadonlySet<Status> = new Set(['QUEUED', 'IN_FLIGHT', 'APPROVED']);

/** The HTTP status of an answer about a refund request, for POST and GET alike: 202 until it is final, then 200. */
export function refundHttpStatus(status: Status): 200 | 202 {
  return PENDING.has(status) ? 202 : 200;
}

/** The status an agent is told for a chain now, from the journal alone. */
export function currentStatus(chain: readonly Entry[]): Status {
  return statusOf({
    sending: isOpenDispatch(chain),
    committed: chain.find((e) => e.kind === 'COMMITTED') ?? null,
    ambiguous: has(chain, 'AMBIGUOUS'),
    state: chainState(chain),
    refusal: () => explainChain(chain)?.status ?? null,
  });
}

/** The payment's currency, as the facts the request was made on name it; null when they name none. */
export function paymentCurrencyOf(chain: readonly Entry[]): string | null {
  const premises = chain.find((e) => e.kind === 'PROPOSED')?.premises;
  return isJsonObject(premises) && typeof premises.currency === 'string' ? premises.currency : null;
}

/** Plain words for an agent: what happened, and what a person is doing about it. */
function whyText(status: Status, chain: readonly Entry[], displayName: DisplayName = (name) => name, live: Liveness | null = null): string {
  const { escalation } = latestEscalation(chain);
  if (status === 'QUEUED' && escalation) {
    const required = approvalsRequired(escalation);
    const given = liveApprovalsOf(chain, escalation, live);
    if (given.length > 0 && given.length < required) {
      const who = given.map((a) => displayName(a.by)).join(', ');
      return `approved by ${who} (${given.length} of ${required}); a second approver must decide, nothing is sent until then: ${escalationWhy(escalation)}`;
    }
    return `an approver must decide: ${escalationWhy(escalation)}`;
  }
  if (status === 'QUEUED' && waitsItsTurn(chain)) return whyFor('waiting_turn');
  if (status === 'APPROVED') return 'an approver approved it; it is being sent';
  if (status === 'CLOSED') {
    const closing = closingDecision(chain);
    if (closing?.decision === 'repair' && closing.repair !== null) {
      const amount = closing.repair.set.amount;
      return `an approver accepted a repair instead${typeof amount === 'number' ? `: a refund of ${formatCents(amount, paymentCurrencyOf(chain))}` : ''}, sent as request ${closing.repair.request_id}`;
    }
    const by = closing ? displayName(closing.by) : 'an approver';
    // The reason in the person's words, on one line: a line break or a direction override in it
    // must not make the agent read a statement Interlock never made.
    const reason = closing?.reason ? oneLine(closing.reason) : '';
    return reason ? `rejected by ${by}: ${reason}; it is never sent` : `an approver rejected it (${by}); it is never sent`;
  }
  if (status.startsWith('COMMITTED') || status === 'REAPPLIED_AFTER_QUERY' || status === 'DUPLICATE_IGNORED') return 'the refund was sent to Stripe once';
  if (status === 'IN_FLIGHT') return whyFor('in_flight');
  return whyFor(codeOf(status));
}

/**
 * The why of an answer, and where the chain stands now when that is not the answer's status: the
 * gate's refusal is answered as the gate gave it (inbox §6.1), and an agent is also told that a
 * person has the request now, so it keeps asking rather than taking the refusal as the end.
 */
function whyWithNow(status: Status, chain: readonly Entry[], displayName: DisplayName, live: Liveness | null): string {
  const why = whyText(status, chain, displayName, live);
  const now = currentStatus(chain);
  if (now === status || refundHttpStatus(now) === 200) return why;
  // Refused and owed an escalation that is not written yet: a person will have it.
  const pending =
    now === 'QUEUED' && latestEscalation(chain).escalation === undefined && !waitsItsTurn(chain) ? 'a person will be asked to decide' : whyText(now, chain, displayName, live);
  return `${why}; now ${now}: ${pending}`;
}

/**
 * The HTTP status of an answer: 202 while the request is still pending, whether by the status
 * answered or by where its chain stands now (a refusal a person now has is not final), else 200.
 */
export function answerHttpStatus(answer: RefundAnswer, chain: readonly Entry[]): 200 | 202 {
  return refundHttpStatus(answer.status) === 202 || refundHttpStatus(currentStatus(chain)) === 202 ? 202 : 200;
}

/** A person's name as the inbox shows it: the configured display name, else the name. */
export type DisplayName = (name: string) => string;

/** The last decision a person made on the chain, as an agent is told it, or null; a first approval of two is none. */
export function decisionOf(chain: readonly Entry[], displayName: DisplayName): RefundAnswer['decision'] {
  const decided = lastDecision(chain);
  if (!decided) return null;
  return { action: decided.decision, by: displayName(decided.by), at: new Date(decided.at_ms).toISOString(), reason: decided.reason ?? null };
}

/**
 * The approvals of `escalation` that count: every one recorded, less (given `live`) those that
 * lapsed since, expired or by someone no longer in the group, as the item page shows them voided.
 */
function liveApprovalsOf(chain: readonly Entry[], escalation: Escalated, live: Liveness | null): Decided[] {
  const recorded = approvalsOf(chain, escalation);
  // Once its count is reached the escalation is answered: the approvals are what it was sent under.
  if (live === null || latestEscalation(chain).decision !== undefined) return recorded;
  return recorded.filter((a) => lapsed(a, escalation, live) === null);
}

/** The approvals so far of a request two people must approve, as an agent is told them; null when one approver decides it. */
export function approvalsOfAnswer(chain: readonly Entry[], displayName: DisplayName, live: Liveness | null = null): RefundAnswer['approvals'] {
  const { escalation } = latestEscalation(chain);
  if (!escalation || approvalsRequired(escalation) <= 1) return null;
  const given = liveApprovalsOf(chain, escalation, live).map((a) => ({ by: displayName(a.by), at: new Date(a.at_ms).toISOString() }));
  return { required: approvalsRequired(escalation), given };
}

/**
 * What a queued request waits for, from the journal alone: its turn to reach Stripe while it is
 * bound with no facts yet (`waitsItsTurn`), else a person. Null unless the answer's status or the
 * chain's now is QUEUED.
 */
export function waitingForOf(status: Status, chain: readonly Entry[]): WaitingFor | null {
  if (status !== 'QUEUED' && currentStatus(chain) !== 'QUEUED') return null;
  return waitsItsTurn(chain) ? 'stripe' : 'person';
}

/** The answer to an agent about one chain. */
export function refundAnswer(
  requestId: string,
  effectId: string,
  chain: readonly Entry[],
  status: Status = currentStatus(chain),
  displayName: DisplayName = (name) => name,
  live: Liveness | null = null,
): RefundAnswer {
  const { escalation, decision } = latestEscalation(chain);
  const open = escalation && !decision;
  const explained = explainChain(chain);
  // A refusal a person was then shown is told with the diff they were shown: since the request was
  // asked, as the item page has it, not the send's own against the facts it was approved on.
  const shownAfter = escalation !== undefined && chain.indexOf(escalation) > chain.findLastIndex((e) => e.kind === 'REFUSED' || e.kind === 'AMBIGUOUS');
  const changes = open || (explained && shownAfter) ? escalation.changes : explained?.changes;
  const repairs = open ? escalation.repairs : explained?.repairs;
  return {
    request_id: requestId,
    effect_id: effectId,
    status,
    why: whyWithNow(status, chain, displayName, live),
    currency: paymentCurrencyOf(chain),
    refund: sentRefund(chain),
    waiting_for: waitingForOf(status, chain),
    changes: changes ?? [],
    repairs: repairs ?? [],
    receipt: `/v1/receipts/${effectId}`,
    decision: decisionOf(chain, displayName),
    approvals: approvalsOfAnswer(chain, displayName, live),
  };
}

/**
 * True when the chain's request was bound before a missing reason was kept apart from "" (and
 * before the facts told refunds outside Interlock apart, which is how such a binding is known:
 * its PROPOSED's facts have no `refunded_outside`).
 */
export function boundBeforeReasonsKept(chain: readonly Entry[]): boolean {
  const binding = allOf(chain, 'PROPOSED').find((e) => e.request !== undefined);
  return binding !== undefined && isJsonObject(binding.premises) && !Object.hasOwn(binding.premises, 'refunded_outside');
}

/**
 * The refusal of a request whose `currency` is not its payment's (`paymentCurrency`, lowercase as
 * Stripe writes it; null when it is not known, which is refused too), or null when it is: its
 * amount was worked out in another currency, so it is the wrong amount.
 */
export function currencyMismatch(offered: { currency?: string; amount: number; payment_intent: string }, paymentCurrency: string | null): string | null {
  if (offered.currency === undefined) return null;
  const said = offered.currency.toLowerCase();
  if (paymentCurrency !== null && said === paymentCurrency.toLowerCase()) return null;
  const payment = paymentCurrency === null ? 'in a currency Stripe did not say' : `in ${paymentCurrency.toLowerCase()}`;
  const unit = paymentCurrency === null ? '' : ` (amount is in its smallest unit: ${offered.amount} is ${formatAmount(offered.amount, paymentCurrency)})`;
  return `currency: the request says ${said}, but payment ${offered.payment_intent} is ${payment}${unit}; nothing was written or sent`;
}

/** The fields of a payload, in the order an agent is told about them. */
const PAYLOAD_FIELDS = ['payment_intent', 'amount', 'reason', 'flags', 'context_url', 'on_behalf_of'] as const;

/**
 * The refusal of a request id reused with another payload (docs/agents/http-api.md), or null when the offered
 * payload is the recorded one. Both sides are normalised the same way, so flags in another order
 * are the same payload and a missing reason is not an empty one.
 */
export function conflictingPayload(requestId: string, recorded: RefundRequest, offered: RequestPayload, legacy = false): ConflictingPayloadAnswer | null {
  const was = requestPayload(recorded);
  // Before a missing reason was kept apart from "", every request without one was bound with "":
  // such a binding matches a reason that is missing or empty.
  const sameReason = (a: string | undefined, b: string | undefined) => a === b || (legacy && a === '' && (b === undefined || b === ''));
  const differ = PAYLOAD_FIELDS.filter((field) => (field === 'reason' ? !sameReason(was.reason, offered.reason) : !jsonEqual(was[field], offered[field])));
  if (differ.length === 0) return null;
  return {
    error: {
      code: 'conflicting_payload',
      message: `request ${requestId} was already made with another ${differ.join(', ')}; nothing was written or sent (a different refund needs a new request_id)`,
    },
    status: 'REFUSED:conflicting_payload',
    recorded: was,
    offered,
  };
}
