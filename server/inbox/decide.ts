import type { Entry, Escalated } from '../../shared/entries.ts';
import { type JsonObject, jsonEqual, plain } from '../../shared/json.ts';
import { refused, type Status } from '../../shared/statuses.ts';
import { latestEscalation } from '../journal/chain.ts';
import { boundRequest, chainState, refusedMissingPayment } from './state.ts';

/**
 * The inbox's decisions as pure functions of a chain as read: what a submit answers, and whether
 * a person's decision may be recorded. The inbox (the runner) reads the chain, calls one of these,
 * then writes what it says under a check that the chain has not moved since.
 */

/** What a submit does with a chain as read (inbox §6): answer at once, finish an owed escalation, or decide it. */
export type SubmitStep = { next: 'answer'; status: Status } | { next: 'escalate_owed' } | { next: 'decide' };

/**
 * inbox §6, first match wins: a chain bound to another request answers a conflict (nothing of this
 * one is written); a chain owing an escalation gets it; every other state but NEW answers what it is.
 */
export function decideInboxSubmit(chain: readonly Entry[], request: JsonObject): SubmitStep {
  const bound = boundRequest(chain);
  if (bound !== null && !jsonEqual(bound, plain(request))) return { next: 'answer', status: refused('conflicting_payload') };
  const state = chainState(chain);
  switch (state) {
    case 'NEEDS_ESCALATION':
      return { next: 'escalate_owed' };
    case 'ESCALATED':
      return { next: 'answer', status: 'QUEUED' };
    case 'APPROVED':
      return { next: 'answer', status: 'APPROVED' };
    case 'CLOSED':
      return { next: 'answer', status: 'CLOSED' };
    case 'DONE':
      return { next: 'answer', status: 'DUPLICATE_IGNORED' };
    case 'SENDING':
      return { next: 'answer', status: 'IN_FLIGHT' };
    case 'NEW':
      // Stripe knew no such payment when its turn came: refused for good, nothing sent.
      if (refusedMissingPayment(chain)) return { next: 'answer', status: refused('payment_missing') };
      return { next: 'decide' };
  }
}

/** A person's decision on an item. */
export type PersonAction = 'approve' | 'reject' | 'repair';

/**
 * The preconditions every decision shares (inbox §8), in the spec's order: the item must wait for a
 * person; the person must decide the escalation they saw; an ambiguity is never approved (only
 * closed); and only a member of the escalation's group decides. The escalation to decide, or the
 * status that refuses the decision.
 */
export function decisionPrecondition(
  chain: readonly Entry[],
  by: string,
  seen: string | undefined,
  action: PersonAction,
  membersOf: (group: string) => readonly string[],
): { escalation: Escalated } | Status {
  const escalation = latestEscalation(chain).escalation;
  if (chain.length === 0 || chainState(chain) !== 'ESCALATED' || !escalation) return 'ALREADY_DECIDED';
  if (seen !== undefined && seen !== escalation.hash) return 'SUPERSEDED';
  if (action === 'approve' && escalation.reason === 'ambiguous') return refused('ambiguous');
  if (!membersOf(escalation.group).includes(by)) return refused('lease');
  return { escalation };
}
