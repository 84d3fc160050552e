import type { Entry } from '../../shared/entries.ts';
import { isJsonObject, type Json } from '../../shared/json.ts';
import { boundRequest, waitsItsTurn } from '../../server/inbox/state.ts';
import type { World } from './world.ts';

// What Stripe's rate limits may never do (rate-limits.ts): a 429 is Stripe saying it did nothing,
// so it never makes a refund a person's to judge; and a request sent to wait its turn is decided
// exactly as it would have been at once, never for want of a read, and nothing is left waiting.

/** Reasons a person must judge whatever Stripe's pace: a rule, facts that moved, authority that lapsed. */
const JUDGED_REASONS: ReadonlySet<string> = new Set([
  'needs_judgment',
  'stale_premise',
  'stale_premise_at_recovery',
  'lease',
  'lease_used',
  'lease_at_recovery',
  'approval_expired',
  'approver_removed',
]);

/** A REFUSED target_error Stripe gave on the payment's own facts (MemoryRefunds refuses a disputed charge so). */
function refusedOnFacts(entry: Entry): boolean {
  return entry.kind === 'REFUSED' && entry.code === 'target_error' && /charge_disputed/.test(String(entry.reason));
}

/** Facts read from the payment, as every escalation shows them. */
function readFacts(facts: Json | undefined): boolean {
  return isJsonObject(facts) && typeof facts.payment_intent === 'string' && typeof facts.amount_received === 'number';
}

/**
 * Why this chain went to a person for no reason a person must judge, or null. An ambiguity is a
 * person's only when something the run noted for the effect could have left its send unknown (a
 * crash while it was in flight, a send that timed out); a target error only when Stripe refused
 * it on its facts; an escalation only for those or a judged reason, on facts read.
 */
function unjudged(world: World, effectId: string, chain: readonly Entry[]): string | null {
  const troubled = world.troubled.has(effectId);
  const refusals = new Set(chain.filter(refusedOnFacts).map((e) => e.hash));
  for (const entry of chain) {
    if (entry.kind === 'AMBIGUOUS' && !troubled) return 'is AMBIGUOUS';
    if (entry.kind === 'REFUSED' && entry.code === 'target_error' && !refusals.has(entry.hash)) return `was refused as a target error (${String(entry.reason)})`;
    if (entry.kind !== 'ESCALATED') continue;
    if (!readFacts(entry.facts)) return `was escalated on no facts read (${entry.reason})`;
    const judged = JUDGED_REASONS.has(entry.reason) || (entry.reason === 'ambiguous' && troubled) || (entry.reason === 'target_error' && refusals.size > 0);
    if (!judged) return `was escalated as ${entry.reason}`;
  }
  return null;
}

/**
 * A 429 is never a person's to judge: a chain a send of which Stripe answered 429 ends committed,
 * or refused or escalated for a reason a person must judge, never ambiguous or a target error for
 * the 429. And a request that waited its turn is never escalated for want of a read, and no longer
 * waits once the run has settled.
 */
export function checkRateLimits(world: World, chains: ReadonlyMap<string, Entry[]>): void {
  for (const effectId of world.rateLimited) {
    const chain = chains.get(effectId);
    if (!chain) continue;
    world.hit(world.troubled.has(effectId) ? 'check.rate_limited.troubled' : 'check.rate_limited');
    const why = unjudged(world, effectId, chain);
    if (why !== null) world.violation(`no refund goes to a person for a 429: ${effectId} (${boundRequest(chain)?.id ?? 'no request'}), whose send Stripe answered 429, ${why}`);
  }
  for (const [effectId, chain] of chains) {
    const first = chain[0];
    if (first?.kind !== 'PROPOSED' || first.lease !== null || first.premises !== null) continue;
    world.hit('check.waited_turn');
    const request = boundRequest(chain)?.id ?? 'no request';
    if (waitsItsTurn(chain)) {
      world.violation(`nothing is left waiting its turn: ${effectId} (${request}) still waits after the run settled`);
      continue;
    }
    const why = unjudged(world, effectId, chain);
    if (why !== null) world.violation(`a request that waited its turn is decided as it would have been at once: ${effectId} (${request}) ${why}`);
  }
}
