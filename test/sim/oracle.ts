import type { Entry } from '../../shared/entries.ts';
import { isJsonObject, type Json, type JsonObject, jsonEqual } from '../../shared/json.ts';
import { isPolicyLease } from '../../server/gate/leases.ts';
import { isOpenDispatch, lastOf } from '../../server/journal/chain.ts';
import { DEFAULT_CONFIG_PATH, loadConfig } from '../../server/config/load.ts';
import type { World } from './world.ts';

// The oracle judges every send at the instant it happens, from the simulator's ground truth (the
// memory ledger, the groups, the clock), never from what the code under test recorded: a gate that
// skipped a check would record a clean one.

/**
 * The no-person limit of each currency, as the shipped amount rule sets it: the ground truth a send
 * under the policy is judged by (read from the file, never worked out by the code under test).
 */
export const LIMITS: Readonly<Record<string, number>> = (() => {
  const rule = loadConfig(DEFAULT_CONFIG_PATH).rules.find((r) => r.kind === 'amount_at_most');
  if (rule?.kind !== 'amount_at_most') throw new Error('the shipped config has no amount_at_most rule for the simulator to judge sends by');
  return rule.amount;
})();

/** The facts a refund decision may not see move behind its back; `refunded_by_others` is judged apart. */
const WORLD_FIELDS = ['payment_intent', 'currency', 'amount_received', 'refunded_outside', 'disputed'] as const;

/**
 * Why sending `effect` now, on `premises` under `lease`, is unsafe, or null when it is safe: the
 * authority must be live, nothing outside Interlock may have moved, the refund must fit what is
 * left counting the open dispatches of other effects, and a person's approval must not have seen
 * less refunded than there is now (the rules' headroom allows Interlock's own refunds to move).
 * A resend (`resend`) is judged without that last rule: every dispatch on the payment made since
 * its DISPATCHED counted it as already refunded, so Interlock's own refunds moving since cannot
 * make it one too many; the fit, the authority and the world outside are judged again.
 */
export function unsafeSend(world: World, effectId: string, effect: JsonObject, lease: Json, premises: Json, resend = false): string | null {
  const problem = world.truth.problem(lease);
  if (problem !== null) return `the authority is not live (${problem})`;
  if (!isJsonObject(premises)) return 'no facts were recorded';
  const paymentIntent = String(effect.payment_intent);
  const reserved = world.journal.openDispatchesOn(paymentIntent).filter((e) => e.effect_id !== effectId);
  const now = world.target.capture(paymentIntent, effectId, reserved);
  for (const field of WORLD_FIELDS) {
    if (Object.hasOwn(premises, field) && !jsonEqual(premises[field] ?? null, now[field])) {
      return `${field} was ${JSON.stringify(premises[field])}, now ${JSON.stringify(now[field])}`;
    }
  }
  const amount = effect.amount as number;
  const leftCents = now.amount_received - now.refunded_by_others;
  if (amount > leftCents) return `${amount} does not fit the ${leftCents} left`;
  const seen = premises.refunded_by_others;
  if (!resend && !isPolicyLease(lease) && typeof seen === 'number' && now.refunded_by_others > seen) {
    return `refunded_by_others was ${seen}, now ${now.refunded_by_others}`;
  }
  return null;
}

/** Judge a DISPATCHED as it becomes durable. Runs inside the journal's write lock, so it never throws. */
export function judgeDispatch(world: World, entry: Entry): void {
  if (entry.kind !== 'DISPATCHED') return;
  try {
    world.hit('oracle.dispatch');
    const effect = entry.effect as JsonObject;
    const unsafe = unsafeSend(world, entry.effect_id, effect, entry.lease ?? null, entry.premises ?? null);
    if (unsafe !== null) world.violation(`no send without live authority and current facts: ${entry.effect_id} was dispatched when ${unsafe}`);
    if (isPolicyLease(entry.lease)) judgePolicySend(world, entry.effect_id, effect);
  } catch (error) {
    world.violation(`the oracle failed on a DISPATCHED of ${entry.effect_id}: ${(error as Error).message}`);
  }
}

/**
 * A send with no person must be within the limit of its payment's own currency, as the payments
 * service holds it: in a currency the rules name no limit for, a person always decides.
 */
function judgePolicySend(world: World, effectId: string, effect: JsonObject): void {
  const currency = world.target.payments.get(String(effect.payment_intent))?.currency ?? 'unknown';
  world.hit(`oracle.policy_send.${currency}`);
  const limit = Object.hasOwn(LIMITS, currency) ? LIMITS[currency] : undefined;
  const amount = effect.amount as number;
  if (limit === undefined) world.violation(`no refund with no person in a currency no rule names: ${effectId} sent ${amount} ${currency} under the policy`);
  else if (amount > limit) world.violation(`no refund with no person over its currency's limit: ${effectId} sent ${amount} ${currency} under the policy, over ${limit}`);
}

/** Judge a send as it reaches the target: it must follow a durable DISPATCHED of this very payload, still open. */
export function judgeApply(world: World, effectId: string, effect: JsonObject): void {
  const chain = world.journal.chainNow(effectId);
  const dispatched = lastOf(chain, 'DISPATCHED');
  if (!dispatched || !isOpenDispatch(chain) || !jsonEqual(dispatched.effect ?? null, effect)) {
    world.violation(`no send without a durable DISPATCHED: ${effectId} reached the target with no open dispatch of this payload`);
  }
}

/**
 * Judge a recovery resend at the instant recovery decides to send (its kill point, right before
 * the call to Stripe), on the world then, as a send of its own.
 */
export function judgeResend(world: World, effectId: string): void {
  world.hit('oracle.resend');
  if (world.rateLimited.has(effectId)) world.hit('oracle.resend.after_rate_limit');
  const dispatched = lastOf(world.journal.chainNow(effectId), 'DISPATCHED');
  if (dispatched?.kind !== 'DISPATCHED') {
    world.violation(`no send without a durable DISPATCHED: ${effectId} was resent at recovery with no DISPATCHED`);
    return;
  }
  const unsafe = unsafeSend(world, effectId, dispatched.effect, dispatched.lease, dispatched.premises, true);
  if (unsafe !== null) world.violation(`no send without live authority and current facts: ${effectId} was resent at recovery when ${unsafe}`);
}
