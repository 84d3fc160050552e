import { randomBytes } from 'node:crypto';
import type { Change, Checks, Dispatched, FieldsOf, Repair } from '../../shared/entries.ts';
import type { Json, JsonObject } from '../../shared/json.ts';
import { refused, type Status } from '../../shared/statuses.ts';
import type { JournalStore } from '../journal/store.ts';
import { isOpenDispatch, lastOf } from '../journal/chain.ts';
import type { KillPoint } from './kill-points.ts';
import { decideAfterLookup, decideRecovery, recoveryTier, type Stale } from './decide.ts';
import { isPolicyLease, type LeaseStore } from './leases.ts';
import { type Target, TargetRejectedError } from './target.ts';

/** What recovery needs of the gate that runs it. */
export interface RecoveringGate {
  readonly journal: JournalStore;
  readonly target: Target;
  readonly leases: LeaseStore;
  readonly owner: string;
  readonly claimTtlMs: number;
  readonly wallClockMs: () => number;
  reached(point: KillPoint, effectId: string): Promise<void>;
  settleFailed(effectId: string, reason: string, owner: string): Promise<Status | null>;
}

/** A failure after a resend may have reached the target: the claim is kept until its TTL. */
class SentError extends Error {
  constructor(readonly cause: unknown) {
    super(thrownMessage(cause));
    this.name = errorName(cause);
  }
}

/** The message of what was thrown, when it has one; else the thrown value as text. */
function thrownMessage(cause: unknown): string {
  const message = (typeof cause === 'object' || typeof cause === 'function') && cause !== null && 'message' in cause ? cause.message : undefined;
  return message === undefined || message === null ? String(cause) : String(message);
}

/** The class name of what was thrown (the Stripe SDK's errors all say `name: 'Error'`). */
function errorName(error: unknown): string {
  if (error === null || error === undefined) return 'Error';
  // Object() boxes a primitive, whose constructor names it as the property read did (a thrown string is a String).
  const thrown: object = Object(error);
  const ctor = typeof thrown.constructor === 'function' ? thrown.constructor.name : undefined;
  if (ctor && ctor !== 'Object') return ctor;
  return 'name' in thrown && typeof thrown.name === 'string' ? thrown.name : 'Error';
}

/** What recovery found when it re-checked the authority and facts a dispatch ran under. */
interface Recheck {
  checks: Checks;
  stale: Stale;
  changes: Change[];
  repairs: Repair[];
}

/**
 * Settle one in-flight effect under a fresh recovery claim; null when another worker holds it or
 * settled it first. An exception becomes `UNRESOLVED:<name>` and is tried again on a later pass.
 */
export async function recoverEffect(gate: RecoveringGate, effectId: string): Promise<Status | null> {
  const owner = `${gate.owner}/recover/${randomBytes(16).toString('hex')}`;
  if (!(await gate.journal.claim(effectId, owner, gate.claimTtlMs))) return null;
  let keepClaim = false;
  try {
    return await settle(gate, effectId, owner);
  } catch (error) {
    keepClaim = error instanceof SentError;
    return `UNRESOLVED:${error instanceof SentError ? error.name : errorName(error)}`;
  } finally {
    if (!keepClaim) await gate.journal.release(effectId, owner);
  }
}

async function settle(gate: RecoveringGate, effectId: string, owner: string): Promise<Status | null> {
  const chain = await gate.journal.entries(effectId);
  if (!isOpenDispatch(chain)) return null;
  const dispatched = lastOf(chain, 'DISPATCHED')!;
  const effect = dispatched.effect;
  const { target } = gate;
  const tier = recoveryTier(target, dispatched.ts_ms, gate.wallClockMs());
  if (tier === 3) {
    // No recheck: from the client a crash before the send and one after it look the same.
    await gate.journal.append('AMBIGUOUS', effectId, { code: 'ambiguous' });
    return 'AMBIGUOUS';
  }
  const recheck = await recheckDispatch(gate, effectId, dispatched);
  const { stale, checks: rechecked } = recheck;
  switch (decideRecovery(tier, stale, target.queryable)) {
    case 'resend':
      return resend(gate, effectId, effect, dispatched.lease, owner, false, 'COMMITTED_BY_RETRY', { via: 'retry-idempotent', rechecked });
    case 'ambiguous':
      await gate.journal.append('AMBIGUOUS', effectId, {
        code: 'ambiguous',
        reason: `${stale ?? 'unverified'} at recovery, no lookup`,
        rechecked,
        ...(recheck.changes.length ? { changes: recheck.changes } : {}),
      });
      return 'AMBIGUOUS';
    case 'lookup':
      break;
  }
  const found = await target.query(effectId, effect);
  switch (decideAfterLookup(Boolean(found), stale)) {
    case 'commit_found':
      await gate.journal.append('COMMITTED', effectId, { via: 'recovery-query', rechecked, found });
      return 'COMMITTED_ON_QUERY';
    case 'refuse': {
      const code = stale === 'lease' ? 'lease_at_recovery' : 'stale_premise_at_recovery';
      await gate.journal.append('REFUSED', effectId, {
        code,
        reason: `${stale} at recovery`,
        resolves: true,
        rechecked,
        ...(recheck.changes.length ? { changes: recheck.changes } : {}),
        ...(recheck.repairs.length ? { repairs: recheck.repairs } : {}),
      });
      return refused(code);
    }
    case 'reapply':
      return resend(gate, effectId, effect, dispatched.lease, owner, true, 'REAPPLIED_AFTER_QUERY', { via: 'recovery-reapply', rechecked });
  }
}

/** Re-check exactly what was dispatched: its lease, then (only if live) its premises. */
async function recheckDispatch(gate: RecoveringGate, effectId: string, dispatched: Dispatched): Promise<Recheck> {
  const effect = dispatched.effect;
  const checks: Checks = { ...(await gate.leases.see(dispatched.lease, effect)) };
  if (!checks.lease_live) return { checks, stale: 'lease', changes: [], repairs: [] };
  const key = gate.target.reservationKey?.(effect) ?? null;
  const reserved = key === null ? [] : (await gate.journal.reservations(key)).open;
  const explained = await gate.target.explain(dispatched.premises, effectId, effect, { headroom: isPolicyLease(dispatched.lease), reserved });
  checks.violations = explained.violations;
  // The authority again once the facts are read: an approval can expire, or its approver leave the
  // group, while Stripe is asked, and a resend follows this recheck with no other read of the world.
  const after = await gate.leases.see(dispatched.lease, effect);
  if (!after.lease_live) return { checks: { ...checks, ...after }, stale: 'lease', changes: [], repairs: [] };
  return {
    checks,
    stale: explained.violations.length > 0 ? 'stale_premise' : null,
    changes: explained.changes,
    repairs: explained.repairs,
  };
}

/**
 * Send again under the same key, only while we still hold the claim and the dispatch is still
 * open; with `requery`, look once more under the claim first, because a slow lookup may have
 * outlived an earlier claim.
 */
async function resend(
  gate: RecoveringGate,
  effectId: string,
  effect: JsonObject,
  lease: Json,
  owner: string,
  requery: boolean,
  status: Status,
  commit: Omit<FieldsOf<'COMMITTED'>, 'result'>,
): Promise<Status | null> {
  if (!(await gate.journal.claim(effectId, owner, gate.claimTtlMs))) return 'IN_FLIGHT';
  if (!isOpenDispatch(await gate.journal.entries(effectId))) return null;
  if (requery) {
    const found = await gate.target.query(effectId, effect);
    if (found) {
      await gate.journal.append('COMMITTED', effectId, { via: 'recovery-query', rechecked: commit.rechecked ?? null, found });
      return 'COMMITTED_ON_QUERY';
    }
    // That lookup asked Stripe again: the authority is seen once more before anything is resent.
    const seen = await gate.leases.see(lease, effect);
    if (!seen.lease_live) {
      const rechecked = { ...(commit.rechecked ?? { lease_live: false, lease: null }), ...seen };
      await gate.journal.append('REFUSED', effectId, { code: 'lease_at_recovery', reason: 'lease at recovery', resolves: true, rechecked });
      return refused('lease_at_recovery');
    }
  }
  let result: Json;
  try {
    await gate.reached('recovery_resend', effectId);
    result = await gate.target.apply(effectId, effect);
  } catch (error) {
    if (error instanceof TargetRejectedError) return gate.settleFailed(effectId, error.message, owner);
    throw new SentError(error);
  }
  await gate.journal.append('COMMITTED', effectId, { ...commit, result });
  return status;
}
