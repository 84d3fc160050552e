import { describe, expect, it } from 'vitest';
import { Gate } from '../../server/gate/gate.ts';
import { type Target, TargetBusyError } from '../../server/gate/target.ts';
import { limits } from '../../shared/limits.ts';
import { buildGateWorld, buildProposal, type GateWorld, ORDER } from '../support/gate-world.ts';

/** A gate over the world's target that is answered 429 (nothing done) until `busyUntilMs`, waiting on the world's clock. */
function busyGate(world: GateWorld, busyUntilMs: number): Gate {
  const inner = world.target;
  const target: Target = {
    tier: inner.tier,
    queryable: inner.queryable,
    dedupWindowMs: inner.dedupWindowMs,
    invalidEffect: (effect) => inner.invalidEffect(effect),
    apply: async (effectId, effect) => {
      if (world.clock.wallMs < busyUntilMs) throw new TargetBusyError('429 rate_limit: too many requests');
      return inner.apply(effectId, effect);
    },
    query: (effectId) => inner.query(effectId),
    explain: (premises, effectId, effect) => inner.explain(premises, effectId, effect),
  };
  return new Gate({
    journal: world.journal,
    target,
    leases: world.leases,
    wallClockMs: () => world.clock.wallMs,
    sleep: async (ms) => {
      world.clock.wallMs += Math.ceil(ms);
    },
    random: () => 0.5,
  });
}

describe('gate send on a busy target', () => {
  it.each([
    // [tier, how long the target answers 429, what the send answers, what recovery then settles it as (null: nothing left), refunded cents]
    [1, 5_000, 'COMMITTED', null, 2_000],
    [1, 90_000, 'IN_FLIGHT', 'COMMITTED_BY_RETRY', 2_000],
    [2, 90_000, 'IN_FLIGHT', 'REAPPLIED_AFTER_QUERY', 2_000],
    [3, 5_000, 'COMMITTED', null, 2_000],
    // Recovery of a target with no key and no lookup could only call it ambiguous, though nothing was done: the tries go on.
    [3, 90_000, 'COMMITTED', null, 2_000],
    [3, limits.busyRetryWithoutResendMs + 60_000, 'IN_FLIGHT', 'AMBIGUOUS', 0],
  ] as const)('tier %i answered 429 for %i ms: the send answers %s, recovery settles %s', async (tier, busyMs, sent, recovered, refunded) => {
    const world = buildGateWorld({ tier });
    const busyUntilMs = world.clock.wallMs + busyMs;
    const outcome = await busyGate(world, busyUntilMs).submit(buildProposal(world));
    expect(outcome.status).toBe(sent);
    world.clock.wallMs = Math.max(world.clock.wallMs, busyUntilMs);
    const settled = Object.fromEntries(await world.newGate().recover());
    expect(settled).toEqual(recovered === null ? {} : { [outcome.effectId]: recovered });
    expect(world.target.refundedTotal(ORDER)).toBe(refunded);
  });
});
