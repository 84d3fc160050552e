import { isStatus, PLAIN_STATUSES, REFUSAL_CODES, refused } from '../../shared/statuses.ts';
import type { LedgerRow } from '../../shared/ledger.ts';
import type { Views } from '../views/views.ts';

/** Where outcome lines go: pino's (and so Fastify's) `(fields, message)` call. */
export interface OutcomeLog {
  info(fields: object, message: string): void;
}

/** A send under way is no outcome: its line comes when it lands, is refused or cannot be known. */
const NOT_AN_OUTCOME: ReadonlySet<string> = new Set(['IN_FLIGHT']);

/**
 * The labels of `interlock_refund_requests_total`: every status a request can reach that is final
 * or waiting, from the closed status list (each refusal by its code; `UNRESOLVED:<name>` as one).
 */
export const REFUND_OUTCOME_LABELS: readonly string[] = [...PLAIN_STATUSES.filter((s) => !NOT_AN_OUTCOME.has(s)), ...REFUSAL_CODES.map(refused), 'UNRESOLVED'];

/** The label a status is counted under, or null for none (a send under way, or no status at all). */
export function outcomeLabel(status: string): string | null {
  if (NOT_AN_OUTCOME.has(status) || !isStatus(status)) return null;
  return status.startsWith('UNRESOLVED:') ? 'UNRESOLVED' : status;
}

/** How many times refund requests reached each status since this process began watching, by label. */
export class RefundOutcomeCounts {
  readonly #counts = new Map<string, number>(REFUND_OUTCOME_LABELS.map((label) => [label, 0]));

  count(status: string): void {
    const label = outcomeLabel(status);
    if (label !== null) this.#counts.set(label, (this.#counts.get(label) ?? 0) + 1);
  }

  /** Every label with its count, 0 for those never reached. */
  byLabel(): ReadonlyMap<string, number> {
    return this.#counts;
  }
}

/**
 * One info line each time a refund request's status changes (queued for a person, approved,
 * committed, refused, rejected, ambiguous...), read from the journal as the views apply it, so a
 * status reached in the background (a turn that came, a recovery, a person's decision) is told
 * as one reached while the agent waited. Each line names the request, the agent, the status and
 * (as `reqId`) the `x-request-id` the agent asked with. What stood before the watch began is not told again.
 * Every process on one journal tells what it sees. Each line is counted in `counts` too
 * (`interlock_refund_requests_total`). The answer stops it.
 */
export async function watchRefundOutcomes(views: Views, log: OutcomeLog, counts?: RefundOutcomeCounts): Promise<() => void> {
  // Nothing is read at start and nothing is kept: a chain's status before it moves is the ledger's
  // (`LedgerView.moved`), and for one that stood in a send under way, the status it stood at when
  // the send began, so a chain that comes back to it is not told again, whether this process saw
  // the send begin or started while it was under way.
  const { ledger } = await views.current();
  const tell = (effectId: string, row: LedgerRow, reqId: string | undefined) => {
    // Under the label Fastify gives request ids, so one search finds the call and what came of it.
    const fields = {
      reqId,
      effectId,
      request_id: row.request_id,
      agent: row.agent,
      status: row.status,
      outcome: row.outcome,
      amount_minor: row.amount_asked_minor,
      currency: row.currency,
      decided_by: row.decided_by_login,
    };
    log.info(fields, `refund ${row.request_id} of ${row.agent}: ${row.status}`);
    counts?.count(row.status);
  };
  return views.onChainsMoved((moved, projection) => {
    for (const effectId of moved) {
      const { before, sentFrom, row } = ledger.moved(effectId);
      if (row === null || NOT_AN_OUTCOME.has(row.status)) continue;
      const stood = before !== null && NOT_AN_OUTCOME.has(before) ? sentFrom : before;
      if (stood !== row.status) tell(effectId, row, projection.chains.get(effectId)?.httpRequestId ?? undefined);
    }
  });
}
