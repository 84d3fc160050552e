import { loose } from '../support/entries.ts';
import { describe, expect, it } from 'vitest';
import { SimulatedCrash } from '../../server/gate/target.ts';
import { buildGateWorld, buildProposal, type GateWorld, LEASE, ORDER } from '../support/gate-world.ts';

async function crash(world: GateWorld, fault: 'crash_before' | 'crash_after', proposal = buildProposal(world)) {
  world.target.injectFault(fault);
  await expect(world.gate.submit(proposal)).rejects.toBeInstanceOf(SimulatedCrash);
  return world.gate.effectIdOf(proposal);
}

describe('gate recovery', () => {
  it.each([
    // [tier, fault, change during the outage, expected status, expected refunded cents]
    [1, 'crash_before', 'none', 'COMMITTED_BY_RETRY', 2_000],
    [1, 'crash_after', 'none', 'COMMITTED_BY_RETRY', 2_000],
    [2, 'crash_before', 'none', 'REAPPLIED_AFTER_QUERY', 2_000],
    [2, 'crash_after', 'none', 'COMMITTED_ON_QUERY', 2_000],
    [3, 'crash_before', 'none', 'AMBIGUOUS', 0],
    [3, 'crash_after', 'none', 'AMBIGUOUS', 2_000],
    [1, 'crash_before', 'hand_refund', 'REFUSED:stale_premise_at_recovery', 2_000],
    [2, 'crash_before', 'hand_refund', 'REFUSED:stale_premise_at_recovery', 2_000],
    [1, 'crash_before', 'revoke', 'REFUSED:lease_at_recovery', 0],
    [2, 'crash_before', 'revoke', 'REFUSED:lease_at_recovery', 0],
    [1, 'crash_after', 'revoke', 'COMMITTED_ON_QUERY', 2_000],
  ] as const)('recover: tier %i after %s with %s settles as %s', async (tier, fault, change, status, refunded) => {
    // seed: test_interlock.py test_crash_after_effect_recovers_once_after_restart, test_human_refund_during_outage_is_refused_after_restart,
    // test_permission_revoked_during_outage_is_refused_after_restart, test_no_dedup_no_lookup_is_ambiguous_and_never_resent
    const world = buildGateWorld({ tier });
    const effectId = await crash(world, fault);
    if (change === 'hand_refund') world.target.refundByHand(ORDER, 2_000);
    if (change === 'revoke') world.leases.revoke(LEASE);
    const recovered = await world.newGate().recover();
    expect(Object.fromEntries(recovered)).toEqual({ [effectId]: status });
    expect(world.target.refundedTotal(ORDER)).toBe(refunded);
    expect(await world.journal.inFlight()).toEqual([]);
  });

  it('an ambiguous effect is never resent: every later submit answers AMBIGUOUS', async () => {
    const world = buildGateWorld({ tier: 3 });
    await crash(world, 'crash_before');
    await world.gate.recover();
    expect((await world.gate.submit(buildProposal(world))).status).toBe('AMBIGUOUS');
    expect(world.target.refunds).toEqual([]);
  });

  it('a refusal at recovery carries the change and the repairs', async () => {
    // seed: test_explained.py test_refusal_at_recovery_carries_changes_and_repairs
    const world = buildGateWorld();
    const effectId = await crash(world, 'crash_before');
    world.target.refundByHand(ORDER, 2_000);
    await world.gate.recover();
    const refusal = (await world.journal.entries(effectId)).at(-1)!;
    expect(refusal).toMatchObject({ code: 'stale_premise_at_recovery', resolves: true, changes: [{ field: 'refunded', was: 0, now: 2_000 }] });
    expect(loose(refusal).repairs).toMatchObject([{ code: 'still_fits' }]);
  });

  it('an ambiguous entry never carries repairs', async () => {
    // seed: test_explained.py test_ambiguous_never_carries_repairs
    const world = buildGateWorld({ tier: 3 });
    const effectId = await crash(world, 'crash_before');
    world.target.refundByHand(ORDER, 2_000);
    await world.gate.recover();
    const entry = (await world.journal.entries(effectId)).at(-1)!;
    expect(entry.kind).toBe('AMBIGUOUS');
    expect(loose(entry).repairs).toBeUndefined();
  });

  it('outside the key window a tier-1 target is looked up, never blindly resent', async () => {
    const world = buildGateWorld();
    const effectId = await crash(world, 'crash_after');
    world.target.pruneKeys();
    world.clock.wallMs += 86_400_000 + 3_600_000;
    expect(Object.fromEntries(await world.gate.recover())).toEqual({ [effectId]: 'COMMITTED_ON_QUERY' });
    expect(world.target.refundedTotal(ORDER)).toBe(2_000);
  });

  it('recovery never resends an effect still being applied (the sender claim is live)', async () => {
    // seed: test_review_fixes.py test_recovery_never_resends_an_effect_that_is_still_being_applied
    const world = buildGateWorld();
    let release!: () => void;
    const blocked = new Promise<void>((r) => {
      release = r;
    });
    const original = world.target.apply.bind(world.target);
    world.target.apply = async (id, effect) => {
      await blocked;
      return original(id, effect);
    };
    const sending = world.gate.submit(buildProposal(world));
    await new Promise((r) => setTimeout(r, 10));
    expect(await world.newGate().recover()).toEqual(new Map());
    release();
    expect((await sending).status).toBe('COMMITTED');
    expect(world.target.refunds).toHaveLength(1);
  });

  it('an unknown send failure keeps the effect in flight until the claim expires, then recovery settles it', async () => {
    // seed: test_merge_defects.py test_upstream_exit_mid_send_is_unknown_not_refused
    const world = buildGateWorld({ claimTtlMs: 1_000 });
    const original = world.target.apply.bind(world.target);
    world.target.apply = async () => {
      throw new Error('socket hang up');
    };
    const proposal = buildProposal(world);
    await expect(world.gate.submit(proposal)).rejects.toThrow('socket hang up');
    expect((await world.gate.submit(proposal)).status).toBe('IN_FLIGHT');
    expect(await world.newGate().recover()).toEqual(new Map());
    world.clock.wallMs += 1_000;
    world.target.apply = original;
    const recovered = await world.newGate().recover();
    expect([...recovered.values()]).toEqual(['COMMITTED_BY_RETRY']);
  });

  it('concurrent recoveries resolve an effect once', async () => {
    // seed: test_interlock.py test_concurrent_recovery_resolves_once; test_recovery_locking.py test_concurrent_recovery_on_same_gate_has_one_sender
    const world = buildGateWorld({ tier: 2 });
    await crash(world, 'crash_before');
    const results = await Promise.all([world.gate.recover(), world.gate.recover(), world.newGate().recover()]);
    expect(results.flatMap((r) => [...r.values()])).toEqual(['REAPPLIED_AFTER_QUERY']);
    expect(world.target.refunds).toHaveLength(1);
  });

  it('recover only touches the named effects', async () => {
    // seed: test_interlock.py test_recover_only_touches_named_effects
    const world = buildGateWorld();
    const first = await crash(world, 'crash_before', buildProposal(world, { requestKey: 'a' }));
    const second = await crash(world, 'crash_before', buildProposal(world, { requestKey: 'b' }));
    const recovered = await world.gate.recover({ only: new Set([first]) });
    expect([...recovered.keys()]).toEqual([first]);
    expect(await world.journal.inFlight()).toEqual([second]);
  });

  it('one failing effect does not stop recovery of the others', async () => {
    // seed: test_review_fixes.py test_one_failing_effect_does_not_stop_recovery_of_the_others
    const world = buildGateWorld();
    const bad = await crash(world, 'crash_before', buildProposal(world, { requestKey: 'bad' }));
    const good = await crash(world, 'crash_before', buildProposal(world, { requestKey: 'good' }));
    const original = world.target.explain.bind(world.target);
    world.target.explain = async (premises, effectId, effect) => {
      if (effectId === bad) throw new TypeError('read failed');
      return original(premises, effectId, effect);
    };
    const recovered = await world.gate.recover();
    expect(recovered.get(bad)).toBe('UNRESOLVED:TypeError');
    expect(recovered.get(good)).toBe('COMMITTED_BY_RETRY');
    expect(await world.journal.inFlight()).toEqual([bad]);
  });

  it('a resend that raised keeps its claim, so nobody resends before the TTL', async () => {
    // seed: test_review_fixes.py test_a_resend_that_raised_keeps_its_claim
    const world = buildGateWorld({ claimTtlMs: 5_000 });
    const effectId = await crash(world, 'crash_before');
    const original = world.target.apply.bind(world.target);
    world.target.apply = async () => {
      throw new Error('timeout');
    };
    expect((await world.gate.recover()).get(effectId)).toBe('UNRESOLVED:Error');
    world.target.apply = original;
    expect(await world.newGate().recover()).toEqual(new Map());
    world.clock.wallMs += 5_000;
    expect((await world.newGate().recover()).get(effectId)).toBe('COMMITTED_BY_RETRY');
    expect(world.target.refunds).toHaveLength(1);
  });

  it('a slow lookup cannot resend after another recovery took over and finished', async () => {
    // seed: test_recovery_locking.py test_slow_lookup_cannot_resend_after_another_recovery_takes_over, ..._finishes
    const world = buildGateWorld({ tier: 2, claimTtlMs: 1_000 });
    const effectId = await crash(world, 'crash_before');
    const original = world.target.query.bind(world.target);
    let first = true;
    world.target.query = async (id) => {
      if (first) {
        first = false;
        // Our claim expires during the lookup and another recoverer settles the effect.
        world.clock.wallMs += 1_000;
        const other = await world.newGate().recover();
        expect(other.get(effectId)).toBe('REAPPLIED_AFTER_QUERY');
        return null;
      }
      return original(id);
    };
    const slow = await world.gate.recover();
    expect(slow.get(effectId) ?? null).toBeNull();
    expect(world.target.refunds).toHaveLength(1);
  });

  it('recovery rechecks the lease the send actually ran under', async () => {
    // seed: test_review_fixes.py test_recovery_rechecks_the_lease_the_send_actually_ran_under
    const world = buildGateWorld();
    world.leases.grant('L-other');
    const effectId = await crash(world, 'crash_before');
    // A later proposal under another lease is refused while in flight and must not change what recovery checks.
    expect((await world.gate.submit(buildProposal(world, { lease: 'L-other' }))).status).toBe('IN_FLIGHT');
    world.leases.revoke(LEASE);
    expect((await world.gate.recover()).get(effectId)).toBe('REFUSED:lease_at_recovery');
    expect(world.target.refunds).toEqual([]);
  });
});
