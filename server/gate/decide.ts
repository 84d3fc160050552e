import type { Entry } from '../../shared/entries.ts';
import { type Json, type JsonObject, jsonEqual } from '../../shared/json.ts';
import { limits } from '../../shared/limits.ts';
import { refused, type Status } from '../../shared/statuses.ts';
import { allOf, type DispatchBlocker, has, isOpenDispatch, recordedEffect } from '../journal/chain.ts';
import type { Tier } from './target.ts';

/**
 * The gate's decisions as pure functions of what was read: a chain, the offer, the facts a
 * recheck found, the clock. No await, no clock of their own, no I/O; the gate (the runner) reads,
 * calls one of these, and writes or sends what it says. Guard clauses run in the spec's order
 * (core §4.4 for a submit, §4.7 for recovery), the most specific answer first.
 */

/** What a submit does next, from the chain as read (core §4.4 steps 2 to 6). */
export type SubmitStep =
  /** Answer this and write nothing. */
  | { next: 'answer'; status: Status }
  /** Another payload is bound: record the offer and refuse it (PROPOSED, then REFUSED conflicting_payload). */
  | { next: 'record_conflict'; recorded: Json }
  /** Propose it, judged on `decidedOn` (the facts of the first proposal under the same authority). */
  | { next: 'propose'; decidedOn: Json };

/** What a caller offers the gate, as the gate compares it with the chain. */
export interface Offer {
  effect: JsonObject;
  lease: Json;
  premises: Json;
  /** Whether a conflicting payload is recorded (the default) or only answered. */
  recordConflict: boolean;
}

/**
 * core §4.4 steps 2 to 6: an open dispatch answers IN_FLIGHT; another bound payload is a conflict
 * (before committed or ambiguous: a re-decided payload is reported as such); an ambiguity or a
 * commit answers without writing; otherwise propose, judged on the facts first decided on.
 */
export function decideSubmit(prior: readonly Entry[], offer: Offer, authority: (lease: Json) => Json): SubmitStep {
  if (isOpenDispatch(prior)) return { next: 'answer', status: 'IN_FLIGHT' };
  const bound = recordedEffect(prior);
  if (bound !== undefined && !jsonEqual(bound, offer.effect)) {
    return offer.recordConflict ? { next: 'record_conflict', recorded: bound } : { next: 'answer', status: refused('conflicting_payload') };
  }
  if (has(prior, 'AMBIGUOUS')) return { next: 'answer', status: 'AMBIGUOUS' };
  if (has(prior, 'COMMITTED')) return { next: 'answer', status: 'DUPLICATE_IGNORED' };
  return { next: 'propose', decidedOn: decidedOn(prior, offer.lease, offer.premises, authority) };
}

/**
 * The facts a retry is judged on: those of the first proposal under the same authority, so a
 * retry cannot launder a refusal by re-reading the world; a new authority brings its own facts.
 */
export function decidedOn(prior: readonly Entry[], lease: Json, premises: Json, authority: (lease: Json) => Json): Json {
  const mine = authority(lease);
  const first = allOf(prior, 'PROPOSED').find((e) => jsonEqual(authority(e.lease), mine));
  return first ? first.premises : premises;
}

/** What a dispatch the chain refused answers (core §4.4 step 13), and whether a REFUSED is written for it. */
export function blockedDispatch(blocker: DispatchBlocker): { status: Status; refuse: boolean } {
  switch (blocker) {
    case 'committed':
      return { status: 'DUPLICATE_IGNORED', refuse: false };
    case 'ambiguous':
      return { status: 'AMBIGUOUS', refuse: false };
    case 'in_flight':
      return { status: 'IN_FLIGHT', refuse: false };
    case 'conflicting_payload':
    case 'closed':
    case 'awaiting_decision':
    case 'target_error':
      return { status: refused(blocker), refuse: true };
  }
}

/** What recovery knows of the target it settles against. */
export interface RecoveryTarget {
  tier: Tier;
  queryable: boolean;
  dedupWindowMs: number | null;
}

/**
 * The tier recovery acts at (core §4.7 step 3): past the provider's key window (less a margin for
 * clock skew) a resend could pay twice, so tier 1 falls back to a lookup, or to tier 3 without one.
 */
export function recoveryTier(target: RecoveryTarget, dispatchedAtMs: number, nowMs: number): Tier {
  const { tier, dedupWindowMs } = target;
  if (tier === 1 && dedupWindowMs !== null && nowMs - dispatchedAtMs > dedupWindowMs - limits.dedupMarginMs) return target.queryable ? 2 : 3;
  return tier;
}

/** Why a recheck at recovery failed: the authority lapsed, or a fact changed; null when both hold. */
export type Stale = 'lease' | 'stale_premise' | null;

/**
 * What recovery does once it has rechecked the dispatch (core §4.7 steps 4 to 7): tier 3 is
 * ambiguous without a recheck; tier 1 with everything holding resends under the same key; with no
 * lookup nothing more can be known; otherwise look it up.
 */
export function decideRecovery(tier: Tier, stale: Stale, queryable: boolean): 'ambiguous' | 'resend' | 'lookup' {
  if (tier === 3) return 'ambiguous';
  if (tier === 1 && stale === null) return 'resend';
  if (!queryable) return 'ambiguous';
  return 'lookup';
}

/**
 * What recovery does with a lookup's answer (core §4.7 steps 8 to 10): found means committed, even
 * if the recheck failed (a landed effect is not undone); not found and stale is refused, resolving
 * the dispatch; not found with everything holding is sent again (after one more lookup under the
 * claim).
 */
export function decideAfterLookup(found: boolean, stale: Stale): 'commit_found' | 'refuse' | 'reapply' {
  if (found) return 'commit_found';
  if (stale !== null) return 'refuse';
  return 'reapply';
}
