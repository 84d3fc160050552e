import type { RefundAnswer } from '../../shared/api.ts';
import type { Change, Entry, Repair } from '../../shared/entries.ts';
import { isJsonObject } from '../../shared/json.ts';
import { codeOf, type Status, whyFor } from '../../shared/statuses.ts';
import { explainChain, has, isOpenDispatch, latestEscalation } from '../gate/chain.ts';
import { sentRefund } from '../gate/receipts.ts';
import { committedStatus } from '../inbox/projection.ts';
import { chainState } from '../inbox/state.ts';
import { formatCents } from '../gate/premises.ts';

/** The status an agent is told for a chain now, from the journal alone. */
export function currentStatus(chain: readonly Entry[]): Status {
  if (isOpenDispatch(chain)) return 'IN_FLIGHT';
  const commit = chain.find((e) => e.kind === 'COMMITTED');
  if (commit) return committedStatus(commit);
  if (has(chain, 'AMBIGUOUS')) return 'AMBIGUOUS';
  switch (chainState(chain)) {
    case 'CLOSED':
      return 'CLOSED';
    case 'ESCALATED':
    case 'NEEDS_ESCALATION':
      return 'QUEUED';
    case 'APPROVED':
      return 'APPROVED';
    default: {
      const refusal = explainChain(chain);
      return (refusal?.status as Status | undefined) ?? 'QUEUED';
    }
  }
}

/** Plain words for an agent: what happened, and what a person is doing about it. */
function whyText(status: Status, chain: readonly Entry[]): string {
  const { escalation } = latestEscalation(chain);
  if (status === 'QUEUED' && escalation) return `an approver must decide: ${String(escalation.why)}`;
  if (status === 'APPROVED') return 'an approver approved it; it is being sent';
  if (status === 'CLOSED') {
    const closing = chain.find((e) => e.kind === 'DECIDED' && (e.decision === 'reject' || e.decision === 'repair'));
    if (closing?.decision === 'repair' && isJsonObject(closing.repair) && isJsonObject(closing.repair.set)) {
      const amount = closing.repair.set.amount;
      return `an approver accepted a repair instead${typeof amount === 'number' ? `: a refund of ${formatCents(amount)}` : ''}, sent as request ${String(closing.repair.request_id)}`;
    }
    return `an approver rejected it (${String(closing?.by ?? 'unknown')}); it is never sent`;
  }
  if (status.startsWith('COMMITTED') || status === 'REAPPLIED_AFTER_QUERY' || status === 'DUPLICATE_IGNORED') return 'the refund was sent to Stripe once';
  if (status === 'IN_FLIGHT') return whyFor('in_flight');
  return whyFor(codeOf(status));
}

/** The answer to an agent about one chain. */
export function refundAnswer(requestId: string, effectId: string, chain: readonly Entry[], status: Status = currentStatus(chain)): RefundAnswer {
  const { escalation, decision } = latestEscalation(chain);
  const open = escalation && !decision;
  const explained = explainChain(chain);
  const changes = (open ? escalation.changes : explained?.changes) as Change[] | undefined;
  const repairs = (open ? escalation.repairs : explained?.repairs) as Repair[] | undefined;
  return {
    request_id: requestId,
    effect_id: effectId,
    status,
    why: whyText(status, chain),
    refund: sentRefund(chain),
    changes: changes ?? [],
    repairs: repairs ?? [],
    receipt: `/v1/receipts/${effectId}`,
  };
}
