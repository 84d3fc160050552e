import { describe, expect, it } from 'vitest';
import { WHY } from '../../shared/statuses.ts';
import { explainChain } from '../../server/journal/chain.ts';
import { SimulatedCrash, TargetRejectedError } from '../../server/gate/target.ts';
import { verifyReceipt } from '../../server/receipts/verify.ts';
import { refundAnswer } from '../../server/refunds/answers.ts';
import { owedExplanation } from '../../server/inbox/escalation.ts';
import { buildChain, committedSteps, dispatchedSteps, EFFECT_ID, LEASE, loose, PREMISES, REFUND, type Step } from '../support/entries.ts';
import { buildGateWorld, buildProposal, type GateWorld, ORDER } from '../support/gate-world.ts';

/** A proposal refused for its lease: the gate writes neither changes nor repairs on such a refusal. */
const leaseRefusedSteps: Step[] = [
  ['PROPOSED', { agent: 'refund-bot', lease: LEASE, premises: PREMISES, effect: REFUND }],
  ['REFUSED', { code: 'lease', reason: WHY.lease, checks: { lease_live: false, lease: null } }],
];

/** Crash the world's proposal with the fault and return its effect id. */
async function crash(world: GateWorld, fault: 'crash_before' | 'crash_after') {
  const proposal = buildProposal(world);
  world.target.injectFault(fault);
  await expect(world.gate.submit(proposal)).rejects.toBeInstanceOf(SimulatedCrash);
  return world.gate.effectIdOf(proposal);
}

/** Count the target's applies from now on; while `reject` is set, each one is a definite "no". */
function watchApplies(world: GateWorld, options: { reject?: boolean } = {}) {
  const watch = { calls: 0, reject: options.reject ?? false };
  const apply = world.target.apply.bind(world.target);
  world.target.apply = async (effectId, effect) => {
    watch.calls += 1;
    if (watch.reject) throw new TargetRejectedError('400 charge_disputed');
    return apply(effectId, effect);
  };
  return watch;
}

describe('explainChain on refusals that carry no changes or repairs', () => {
  // seed: test_contract.py test_explain_and_describe_on_old_entries

  it('a lease refusal is explained with its code, its plain words and empty changes and repairs', () => {
    const chain = buildChain(EFFECT_ID, leaseRefusedSteps);
    expect(explainChain(chain)).toEqual({ effect_id: EFFECT_ID, status: 'REFUSED:lease', reason: 'lease', why: WHY.lease, changes: [], repairs: [] });
  });

  it('a refusal with no code, or a code nobody knows, falls back to the generic words', () => {
    const bare = buildChain(EFFECT_ID, [leaseRefusedSteps[0]!, ['REFUSED', { reason: 'no code at all' }]]);
    expect(explainChain(bare)).toMatchObject({ status: 'REFUSED', reason: 'refused', why: WHY.refused, changes: [], repairs: [] });
    const unknown = buildChain(EFFECT_ID, [leaseRefusedSteps[0]!, ['REFUSED', { code: 'duplicate_symbol', reason: 'x' }]]);
    expect(explainChain(unknown)).toMatchObject({ status: 'REFUSED:duplicate_symbol', reason: 'duplicate_symbol', why: WHY.refused });
  });

  it('an ambiguity outranks a later refusal, and an AMBIGUOUS entry explains itself as ambiguous', () => {
    const chain = buildChain(EFFECT_ID, [
      ...dispatchedSteps(),
      ['AMBIGUOUS', { code: 'ambiguous' }],
      ['PROPOSED', { agent: 'refund-bot', lease: LEASE, premises: PREMISES, effect: { ...REFUND, amount: 3_000 } }],
      ['REFUSED', { code: 'conflicting_payload', reason: 'other arguments' }],
    ]);
    expect(explainChain(chain)).toEqual({ effect_id: EFFECT_ID, status: 'AMBIGUOUS', reason: 'ambiguous', why: WHY.ambiguous, changes: [], repairs: [] });
  });

  it('`of` picks the latest entry of that status, even past a later refusal', () => {
    const chain = buildChain(EFFECT_ID, [
      ...leaseRefusedSteps,
      ['PROPOSED', { agent: 'refund-bot', lease: LEASE, premises: PREMISES, effect: REFUND }],
      ['REFUSED', { code: 'stale_premise', reason: ['refunded: was 0, now 30'], changes: [{ field: 'refunded', was: 0, now: 30 }] }],
    ]);
    expect(explainChain(chain)).toMatchObject({ reason: 'stale_premise', changes: [{ field: 'refunded' }] });
    expect(explainChain(chain, 'REFUSED:lease')).toMatchObject({ reason: 'lease', changes: [], repairs: [] });
    expect(explainChain(chain, 'AMBIGUOUS')).toBeNull();
  });

  it('refusals that only say waiting or closed are skipped; with nothing else the chain has no explanation', () => {
    const quietOnly = buildChain(EFFECT_ID, [leaseRefusedSteps[0]!, ['REFUSED', { code: 'awaiting_decision', reason: WHY.awaiting_decision }], ['REFUSED', { code: 'closed', reason: WHY.closed }]]);
    expect(explainChain(quietOnly)).toBeNull();
    const behindQuiet = buildChain(EFFECT_ID, [...leaseRefusedSteps, ['REFUSED', { code: 'awaiting_decision', reason: WHY.awaiting_decision }]]);
    expect(explainChain(behindQuiet)).toMatchObject({ reason: 'lease' });
    // Asked for by name, a quiet refusal is still found.
    expect(explainChain(behindQuiet, 'REFUSED:awaiting_decision')).toMatchObject({ reason: 'awaiting_decision', why: WHY.awaiting_decision });
  });

  it('a refusal followed by a COMMITTED explains nothing: the refund landed afterwards', () => {
    const chain = buildChain(EFFECT_ID, [...leaseRefusedSteps, ...committedSteps()]);
    expect(explainChain(chain)).toBeNull();
    expect(explainChain(chain, 'REFUSED:lease')).toBeNull();
  });

  it("the agent's answer and the person's escalation describe a lease refusal with empty changes and repairs", () => {
    const chain = buildChain(EFFECT_ID, leaseRefusedSteps);
    // Refused, and owed to a person: the agent is told both, so it keeps asking.
    const why = `${WHY.lease}; now QUEUED: a person will be asked to decide`;
    expect(refundAnswer('case-4471', EFFECT_ID, chain, 'REFUSED:lease')).toMatchObject({ status: 'REFUSED:lease', why, changes: [], repairs: [] });
    expect(owedExplanation(chain, PREMISES, (reason) => reason)).toEqual({ reason: 'lease', detail: 'REFUSED:lease', changes: [], repairs: [] });
    // The facts moved since: the person is shown the diff from the facts the decision was made on.
    expect(owedExplanation(chain, { ...PREMISES, refunded: 500 }, (reason) => reason).changes).toEqual([{ field: 'refunded', was: 0, now: 500 }]);
  });
});

describe('gate: a definite rejection is settled once and never resent', () => {
  it.each([
    [1, 'COMMITTED_BY_RETRY would resend under the key'],
    [2, 'REAPPLIED_AFTER_QUERY would resend after the lookup'],
  ] as const)('recover: tier %i, the resend rejected by the target settles as REFUSED:target_error (where %s)', async (tier, _instead) => {
    // seed: test_escalation_fixes.py test_rejected_resend_at_recovery_is_settled
    const world = buildGateWorld({ tier });
    const effectId = await crash(world, 'crash_before');
    const applies = watchApplies(world, { reject: true });
    expect(Object.fromEntries(await world.newGate().recover())).toEqual({ [effectId]: 'REFUSED:target_error' });
    expect((await world.journal.entries(effectId)).at(-1)).toMatchObject({
      kind: 'REFUSED',
      code: 'target_error',
      resolves: true,
      reason: 'target reported failure: 400 charge_disputed',
    });
    expect(await world.journal.inFlight()).toEqual([]);
    // Settled: neither a later recovery nor a resubmission sends it again, even once the target would accept.
    applies.reject = false;
    expect(await world.newGate().recover()).toEqual(new Map());
    expect((await world.gate.submit(buildProposal(world))).status).toBe('REFUSED:target_error');
    expect(applies.calls).toBe(1);
    expect(world.target.refunds).toEqual([]);
  });

  it.each([
    ['the send', false],
    ['the recovery resend', true],
  ] as const)('a lookup that throws while settling a rejection of %s ends REFUSED:target_error naming the lookup error', async (_when, atRecovery) => {
    // seed: test_lockin_review_fixes.py test_lookup_error_while_settling_a_rejected_send_never_resends
    const world = buildGateWorld();
    const effectId = atRecovery ? await crash(world, 'crash_before') : world.gate.effectIdOf(buildProposal(world));
    const applies = watchApplies(world, { reject: true });
    world.target.query = async () => {
      throw new Error('lookup timed out');
    };
    const status = atRecovery ? (await world.newGate().recover()).get(effectId) : (await world.gate.submit(buildProposal(world))).status;
    expect(status).toBe('REFUSED:target_error');
    const refusal = (await world.journal.entries(effectId)).at(-1)!;
    expect(refusal).toMatchObject({ code: 'target_error', resolves: true });
    expect(loose(refusal).reason).toBe('target reported failure: 400 charge_disputed; lookup failed: lookup timed out');
    expect(await world.journal.inFlight()).toEqual([]);
    expect(await world.newGate().recover()).toEqual(new Map());
    expect((await world.gate.submit(buildProposal(world))).status).toBe('REFUSED:target_error');
    expect(applies.calls).toBe(1);
    expect(world.target.refunds).toEqual([]);
  });
});

describe('gate: a read that fails never sends', () => {
  it.each([
    [2, 'a lookup target'],
    [1, 'a keyed target past its key window'],
  ] as const)('recover: tier %i (%s), a lookup that throws leaves a landed refund UNRESOLVED and unsent; a later working lookup commits it', async (tier, _target) => {
    // seed: test_integration_recovery_fixes.py test_bad_recovery_lookup_never_resends_a_landed_action
    const world = buildGateWorld({ tier });
    const effectId = await crash(world, 'crash_after');
    if (tier === 1) {
      // The provider forgot the key: a resend now would pay twice, so recovery must rely on the lookup.
      world.target.pruneKeys();
      world.clock.wallMs += 86_400_000 + 3_600_000;
    }
    const query = world.target.query.bind(world.target);
    world.target.query = async () => {
      throw new Error('lookup timed out');
    };
    const applies = watchApplies(world);
    expect(Object.fromEntries(await world.newGate().recover())).toEqual({ [effectId]: 'UNRESOLVED:Error' });
    expect((await world.journal.entries(effectId)).at(-1)!.kind).toBe('DISPATCHED');
    expect(await world.journal.inFlight()).toEqual([effectId]);
    world.target.query = query;
    expect(Object.fromEntries(await world.newGate().recover())).toEqual({ [effectId]: 'COMMITTED_ON_QUERY' });
    expect(applies.calls).toBe(0);
    expect(world.target.refundedTotal(ORDER)).toBe(2_000);
  });

  it('a premise read that throws inside submit writes no DISPATCHED and sends nothing; a retry later sends once', async () => {
    // seed: test_integration_recovery_fixes.py test_failure_at_dispatch_recheck_does_not_send
    const world = buildGateWorld();
    const proposal = buildProposal(world);
    const explain = world.target.explain.bind(world.target);
    world.target.explain = async () => {
      throw new Error('orders service unreachable');
    };
    const applies = watchApplies(world);
    await expect(world.gate.submit(proposal)).rejects.toThrow('orders service unreachable');
    const effectId = world.gate.effectIdOf(proposal);
    expect((await world.journal.entries(effectId)).map((e) => e.kind)).toEqual(['PROPOSED', 'AUTHORIZED']);
    expect(await world.journal.inFlight()).toEqual([]);
    expect(await world.newGate().recover()).toEqual(new Map());
    expect([applies.calls, world.target.refunds.length]).toEqual([0, 0]);
    world.target.explain = explain;
    expect((await world.gate.submit(proposal)).status).toBe('COMMITTED');
    expect(world.target.refundedTotal(ORDER)).toBe(2_000);
    expect(await verifyReceipt({ effect_id: effectId, entries: await world.journal.entries(effectId) })).toMatchObject({ valid: true, happened_once: true });
  });
});
