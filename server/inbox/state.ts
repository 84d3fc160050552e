import { type ChainState, isRefundRequest, type RefundRequest } from '../../shared/api.ts';
import type { Decided, Entry } from '../../shared/entries.ts';
import { isJsonObject, type JsonObject, plain } from '../../shared/json.ts';
import { allOf, closingDecision, has, isOpenDispatch, lastOf, latestEscalation } from '../journal/chain.ts';
import { isPolicyLease } from '../gate/leases.ts';

/** Refusals that only say "waiting" or "closed": they never reopen an item. */
export const QUIET_CODES: ReadonlySet<string> = new Set(['awaiting_decision', 'closed', 'payment_missing']);

/** True for a refusal or ambiguity that owes a person a look. */
export function owesEscalation(entry: Entry): boolean {
  return (entry.kind === 'REFUSED' || entry.kind === 'AMBIGUOUS') && !QUIET_CODES.has(entry.code);
}

/** Where a chain stands, from its entries alone (inbox §4), first match wins. */
export function chainState(chain: readonly Entry[]): ChainState {
  if (isOpenDispatch(chain)) return 'SENDING';
  if (has(chain, 'COMMITTED')) return 'DONE';
  if (closingDecision(chain)) return 'CLOSED';
  const { escalation, decision } = latestEscalation(chain);
  if (escalation && !decision) return 'ESCALATED';
  const window = escalation && decision ? chain.slice(chain.indexOf(decision) + 1) : chain;
  if (window.some(owesEscalation)) return 'NEEDS_ESCALATION';
  return escalation ? 'APPROVED' : 'NEW';
}

/** The request bound to a chain: the `request` of the first PROPOSED that carries one. */
export function boundRequest(chain: readonly Entry[]): RefundRequest | null {
  for (const proposed of allOf(chain, 'PROPOSED')) if (isRefundRequest(proposed.request)) return proposed.request;
  return null;
}

/**
 * True for a request accepted while the Stripe budget had no room: its payload is bound (the
 * lease-null PROPOSED) with no facts yet, and nothing else has happened to it. It waits its turn
 * (server/stripe/turn-queue.ts), never a sweep's.
 */
export function waitsItsTurn(chain: readonly Entry[]): boolean {
  const first = chain[0];
  return chain.length === 1 && first !== undefined && first.kind === 'PROPOSED' && first.lease === null && first.premises === null;
}

/** True once a request that waited its turn found Stripe knows no such payment: refused for good, nothing sent. */
export function refusedMissingPayment(chain: readonly Entry[]): boolean {
  return chain.some((e) => e.kind === 'REFUSED' && e.code === 'payment_missing');
}

/** The facts recorded when the payload was bound (the lease-null PROPOSED), if any. */
export function bindingFacts(chain: readonly Entry[]): JsonObject | null {
  const binding = allOf(chain, 'PROPOSED').find((e) => e.lease === null);
  return binding && isJsonObject(binding.premises) ? binding.premises : null;
}

/** True when the chain belongs to this inbox: its first entry is a PROPOSED by it. */
export function ownedBy(chain: readonly Entry[], inboxName: string): boolean {
  const first = chain[0];
  return first !== undefined && first.kind === 'PROPOSED' && first.agent === inboxName;
}

/** Sent with no person: the last send ran under the policy lease, no person ever saw it, and it is no repair. */
export function clearedByPolicy(chain: readonly Entry[]): boolean {
  const lastDispatch = lastOf(chain, 'DISPATCHED');
  const request = boundRequest(chain);
  return (
    lastDispatch !== undefined &&
    isPolicyLease(lastDispatch.lease) &&
    request?.repair_of === undefined &&
    !has(chain, 'ESCALATED')
  );
}

/**
 * The request a repair decision creates (inbox §11): the bound request with the repair's fields
 * set, under the repair's request id. Null unless `decision` is an accepted repair.
 */
export function repairChildOf(bound: RefundRequest | null, decision: Decided | null | undefined): RefundRequest | null {
  if (!bound || decision?.decision !== 'repair' || decision.repair === null) return null;
  const child = plain({ ...bound, ...decision.repair.set, id: decision.repair.request_id, repair_of: bound.id });
  return isRefundRequest(child) ? child : null;
}
