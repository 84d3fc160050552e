import { describe, expect, it } from 'vitest';
import type { Decision } from '../../shared/entries.ts';
import type { Json, JsonObject } from '../../shared/json.ts';
import { Authority } from '../../server/gate/leases.ts';
import { buildGateWorld, buildProposal, type GateWorld, ORDER } from '../support/gate-world.ts';

/** A chain the inbox would write: the binding PROPOSED, one escalation, optionally a decision. */
async function escalate(world: GateWorld, facts: JsonObject, decision?: { decision: string; by: string; atMs: number }) {
  const proposal = buildProposal(world);
  const effectId = world.gate.effectIdOf(proposal);
  await world.journal.append('PROPOSED', effectId, { agent: 'inbox', lease: null, premises: facts, effect: proposal.effect });
  const escalation = await world.journal.append('ESCALATED', effectId, {
    at_ms: 1_000,
    reason: 'needs_judgment',
    why: 'a rule wants a person to decide',
    detail: ['amount under $50'],
    facts,
    changes: [],
    repairs: [],
    route: 'default',
    group: 'ap-leads',
    routed_to: ['ana'],
    level: 0,
    due_ms: null,
    breach: false,
  });
  if (decision) {
    await world.journal.append('DECIDED', effectId, {
      at_ms: decision.atMs,
      by: decision.by,
      decision: decision.decision as Decision,
      escalation: escalation.hash,
      group: 'ap-leads',
      members: ['ana'],
      repair: null,
    });
  }
  return { effectId, escalation, proposal };
}

function withAuthority(world: GateWorld) {
  const authority = new Authority({ members: (g) => (g === 'ap-leads' ? ['ana'] : []), maxAgeMs: null, nowMs: () => 2_000 });
  return world.newGate({ leases: authority });
}

describe('gate and person decisions', () => {
  const personLease = (hash: string, overrides: JsonObject = {}): Json => ({ by: 'ana', at_ms: 1_500, group: 'ap-leads', escalation: hash, ...overrides });

  it('a person lease sends only under an approval of the latest escalation, on the facts shown', async () => {
    // seed: test_contract.py test_person_lease_needs_decision_on_latest_escalation
    const world = buildGateWorld();
    const facts = world.target.capture(ORDER);
    const { escalation, proposal } = await escalate(world, facts, { decision: 'approve', by: 'ana', atMs: 1_500 });
    const gate = withAuthority(world);
    const outcome = await gate.submit({ ...proposal, agent: 'inbox', lease: personLease(escalation.hash), premises: facts });
    expect(outcome.status).toBe('COMMITTED');
  });

  it.each([
    ['another escalation hash', { escalation: 'f'.repeat(64) }],
    ['another decision time', { at_ms: 1_400 }],
    ['another group', { group: 'controller' }],
  ])('a person lease naming %s is awaiting_decision and never sent', async (_name, overrides) => {
    const world = buildGateWorld();
    const facts = world.target.capture(ORDER);
    const { escalation, proposal } = await escalate(world, facts, { decision: 'approve', by: 'ana', atMs: 1_500 });
    const authority = new Authority({ members: () => ['ana'], maxAgeMs: null, nowMs: () => 2_000 });
    const gate = world.newGate({ leases: authority });
    const outcome = await gate.submit({ ...proposal, lease: personLease(escalation.hash, overrides), premises: facts });
    expect(outcome.status).toBe('REFUSED:awaiting_decision');
    expect(world.target.refunds).toEqual([]);
  });

  it('facts the approver never saw are awaiting_decision', async () => {
    // inbox scenario 27: a person's lease used on facts the approver never saw is not sent
    const world = buildGateWorld();
    const shown = { ...world.target.capture(ORDER), note: 'shown to ana' };
    const { escalation, proposal } = await escalate(world, shown, { decision: 'approve', by: 'ana', atMs: 1_500 });
    const outcome = await withAuthority(world).submit({ ...proposal, lease: personLease(escalation.hash), premises: world.target.capture(ORDER) });
    expect(outcome.status).toBe('REFUSED:awaiting_decision');
    expect(world.target.refunds).toEqual([]);
  });

  it('a policy send over an open escalation is awaiting_decision', async () => {
    // seed: test_contract.py test_policy_send_over_open_escalation_is_awaiting_decision
    const world = buildGateWorld();
    const facts = world.target.capture(ORDER);
    const { proposal } = await escalate(world, facts);
    const outcome = await withAuthority(world).submit({ ...proposal, lease: { by: 'policy', rules: [] }, premises: facts });
    expect(outcome.status).toBe('REFUSED:awaiting_decision');
    expect(world.target.refunds).toEqual([]);
  });

  it('a closed effect is never dispatched', async () => {
    // seed: test_contract.py test_closed_effect_is_never_dispatched
    const world = buildGateWorld();
    const facts = world.target.capture(ORDER);
    const { escalation, proposal } = await escalate(world, facts, { decision: 'reject', by: 'ana', atMs: 1_500 });
    const outcome = await withAuthority(world).submit({ ...proposal, lease: personLease(escalation.hash), premises: facts });
    expect(outcome.status).toBe('REFUSED:closed');
    expect(world.target.refunds).toEqual([]);
  });

  it('nobody can approve as policy: a person lease named policy is not an approval', async () => {
    // seed: test_review_fixes.py test_nobody_can_approve_as_policy
    const authority = new Authority({ members: () => ['policy'], maxAgeMs: null, nowMs: () => 0 });
    expect(authority.problem({ by: 'policy', at_ms: 0, group: 'g', escalation: 'h' })).toBe('not_an_approval');
  });

  it.each([
    ['a string', 'L-refund'],
    ['an array', ['ana']],
    ['a NaN time', { by: 'ana', at_ms: Number.NaN, group: 'ap-leads', escalation: 'h' }],
    ['a missing group', { by: 'ana', at_ms: 1, escalation: 'h' }],
  ])('an unknown lease shape (%s) is not live', (_name, lease) => {
    const authority = new Authority({ members: () => ['ana'], maxAgeMs: null, nowMs: () => 0 });
    expect(authority.see(lease as Json).lease_live).toBe(false);
  });

  it('a person lease expires after the maximum age and lapses when the approver leaves the group', () => {
    const members = ['ana'];
    let nowMs = 1_500;
    const authority = new Authority({ members: () => members, maxAgeMs: 4 * 3_600_000, nowMs: () => nowMs });
    const lease = { by: 'ana', at_ms: 1_500, group: 'ap-leads', escalation: 'h' };
    expect(authority.problem(lease)).toBeNull();
    nowMs += 4 * 3_600_000 + 1;
    expect(authority.problem(lease)).toBe('approval_expired');
    nowMs = 1_500;
    members.pop();
    expect(authority.problem(lease)).toBe('approver_removed');
  });
});
