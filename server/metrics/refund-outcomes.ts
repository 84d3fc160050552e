import type { Views } from '../views.ts';

/** Where outcome lines go: pino's (and so Fastify's) `(fields, message)` call. */
export interface OutcomeLog {
  info(fields: object, message: string): void;
}

/** A send under way is no outcome: its line comes when it lands, is refused or cannot be known. */
const NOT_AN_OUTCOME: ReadonlySet<string> = new Set(['IN_FLIGHT']);

/**
 * One info line each time a refund request's status changes (queued for a person, approved,
 * committed, refused, rejected, ambiguous...), read from the journal as the views apply it, so a
 * status reached in the background (a turn that came, a recovery, a person's decision) is told
 * as one reached while the agent waited. Each line names the request, the agent, the status and
 * (as `reqId`) the `x-request-id` the agent asked with. What stood before the watch began is not told again.
 * Every process on one journal tells what it sees. The answer stops it.
 */
export async function watchRefundOutcomes(views: Views, log: OutcomeLog): Promise<() => void> {
  const { ledger, inbox } = await views.current();
  const asLogin = (name: string) => name;
  const told = new Map<string, string>();
  for (const effectId of inbox.ownedIds()) {
    const row = ledger.rowOf(effectId, asLogin);
    if (row !== null) told.set(effectId, row.status);
  }
  return views.onChainsMoved((moved, projection) => {
    for (const effectId of moved) {
      const row = ledger.rowOf(effectId, asLogin);
      if (row === null || NOT_AN_OUTCOME.has(row.status) || told.get(effectId) === row.status) continue;
      told.set(effectId, row.status);
      // Under the label Fastify gives request ids, so one search finds the call and what came of it.
      const fields = {
        reqId: projection.chains.get(effectId)?.httpRequestId ?? undefined,
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
    }
  });
}
