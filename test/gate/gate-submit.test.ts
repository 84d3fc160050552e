import { loose } from '../support/entries.ts';
import { describe, expect, it } from 'vitest';
import { InvalidEffectError } from '../../server/gate/target.ts';
import { buildGateWorld, buildProposal, LEASE, ORDER } from '../support/gate-world.ts';

describe('gate submit', () => {
  it('happy path then duplicate: one refund, the repeat is ignored and writes nothing', async () => {
    // seed: test_interlock.py test_happy_path_then_duplicate
    const world = buildGateWorld();
    const first = await world.gate.submit(buildProposal(world));
    const before = (await world.journal.entries(first.effectId)).length;
    const second = await world.gate.submit(buildProposal(world));
    expect([first.status, second.status]).toEqual(['COMMITTED', 'DUPLICATE_IGNORED']);
    expect((await world.journal.entries(first.effectId)).length).toBe(before);
    expect(world.target.refundedTotal(ORDER)).toBe(2_000);
  });

  it('records the request, the lease and the kinds in order', async () => {
    // seed: test_contract.py test_gate_records_code_and_request
    const world = buildGateWorld();
    const { effectId } = await world.gate.submit(buildProposal(world, { request: { id: 'case-4471', note: 'jar' } }));
    const chain = await world.journal.entries(effectId);
    expect(chain.map((e) => e.kind)).toEqual(['PROPOSED', 'AUTHORIZED', 'DISPATCHED', 'COMMITTED']);
    expect(loose(chain[0]).request).toEqual({ id: 'case-4471', note: 'jar' });
    expect(loose(chain[2]).checks).toEqual({ lease_live: true, lease: null, violations: [] });
  });

  it('a re-decided amount under the same request is refused and never sent', async () => {
    // seed: test_interlock.py test_redecided_amount_is_refused
    const world = buildGateWorld();
    await world.gate.submit(buildProposal(world));
    const outcome = await world.gate.submit(buildProposal(world, { amountCents: 3_000 }));
    expect(outcome.status).toBe('REFUSED:conflicting_payload');
    const refusal = (await world.journal.entries(outcome.effectId)).at(-1)!;
    expect(refusal).toMatchObject({ code: 'conflicting_payload', recorded: { amount: 2_000 }, offered: { amount: 3_000 } });
    expect(world.target.refundedTotal(ORDER)).toBe(2_000);
  });

  it('a revoked lease is refused before anything is sent', async () => {
    const world = buildGateWorld();
    world.leases.revoke(LEASE);
    const outcome = await world.gate.submit(buildProposal(world));
    expect(outcome.status).toBe('REFUSED:lease');
    expect(world.target.refunds).toEqual([]);
  });

  it('a premise that changed before dispatch is refused with the change and a repair', async () => {
    // seed: test_interlock.py test_premise_change_before_dispatch_is_refused; test_explained.py test_stale_refusal_names_the_change
    const world = buildGateWorld();
    const proposal = buildProposal(world);
    world.target.refundByHand(ORDER, 3_000);
    const outcome = await world.gate.submit(proposal);
    expect(outcome.status).toBe('REFUSED:stale_premise');
    const refusal = (await world.journal.entries(outcome.effectId)).at(-1)!;
    expect(loose(refusal).changes).toEqual([{ field: 'refunded', was: 0, now: 3_000 }]);
    expect(loose(refusal).repairs).toMatchObject([{ code: 'still_fits', set: {} }]);
    expect(world.target.refundedTotal(ORDER)).toBe(3_000);
  });

  it('an amount over what is left suggests refunding what remains', async () => {
    // seed: test_explained.py test_over_remaining_suggests_refund_remaining
    const world = buildGateWorld();
    const proposal = buildProposal(world, { amountCents: 5_000 });
    world.target.refundByHand(ORDER, 7_000);
    const outcome = await world.gate.submit(proposal);
    const refusal = (await world.journal.entries(outcome.effectId)).at(-1)!;
    expect(loose(refusal).repairs).toMatchObject([{ code: 'refund_remaining', set: { amount: 3_000 } }]);
  });

  it('a full hand refund or an ineligible order suggests nothing', async () => {
    // seed: test_explained.py test_full_hand_refund_or_ineligible_suggests_nothing
    const full = buildGateWorld();
    const proposal = buildProposal(full);
    full.target.refundByHand(ORDER, 10_000);
    const refusedFull = (await full.journal.entries((await full.gate.submit(proposal)).effectId)).at(-1)!;
    expect(loose(refusedFull).repairs).toBeUndefined();
    const ineligible = buildGateWorld();
    const p2 = buildProposal(ineligible);
    ineligible.target.orders.get(ORDER)!.eligible = false;
    const refusedIneligible = (await ineligible.journal.entries((await ineligible.gate.submit(p2)).effectId)).at(-1)!;
    expect(loose(refusedIneligible).code).toBe('stale_premise');
    expect(loose(refusedIneligible).repairs).toBeUndefined();
  });

  it('a retry after a refusal is judged on the facts first decided on, not re-read ones', async () => {
    // seed: test_interlock.py test_retry_after_refusal_is_checked_against_the_original_decision
    const world = buildGateWorld();
    const proposal = buildProposal(world);
    world.target.refundByHand(ORDER, 3_000);
    await world.gate.submit(proposal);
    const retry = await world.gate.submit(buildProposal(world));
    expect(retry.status).toBe('REFUSED:stale_premise');
    expect(world.target.refundedTotal(ORDER)).toBe(3_000);
  });

  it('concurrent submits of one request dispatch once', async () => {
    // seed: test_interlock.py test_concurrent_submits_dispatch_once
    const world = buildGateWorld();
    const gates = Array.from({ length: 8 }, () => world.newGate());
    const outcomes = await Promise.all(gates.map((g) => g.submit(buildProposal(world))));
    const statuses = outcomes.map((o) => o.status);
    expect(statuses.filter((s) => s === 'COMMITTED')).toHaveLength(1);
    expect(statuses.every((s) => ['COMMITTED', 'IN_FLIGHT', 'DUPLICATE_IGNORED'].includes(s))).toBe(true);
    expect(world.target.refunds).toHaveLength(1);
  });

  it('a different payload cannot win the dispatch race', async () => {
    // seed: test_review_fixes.py test_a_different_payload_cannot_win_the_dispatch_race
    const world = buildGateWorld();
    const outcomes = await Promise.all([
      world.newGate().submit(buildProposal(world)),
      world.newGate().submit(buildProposal(world, { amountCents: 3_000 })),
    ]);
    const statuses = outcomes.map((o) => o.status);
    expect(statuses.filter((s) => s === 'COMMITTED')).toHaveLength(1);
    expect(statuses.every((s) => ['COMMITTED', 'IN_FLIGHT', 'REFUSED:conflicting_payload'].includes(s))).toBe(true);
    // Whatever interleaving happened, what was sent is the payload bound first.
    const bound = (await world.journal.entries(outcomes[0]!.effectId)).find((e) => e.kind === 'PROPOSED')!.effect;
    expect(world.target.refunds.map((r) => ({ order: r.order, amount: r.amountCents }))).toEqual([bound]);
  });

  it.each([
    ['a zero amount', { order: ORDER, amount: 0 }],
    ['a negative amount', { order: ORDER, amount: -5 }],
    ['a fractional amount', { order: ORDER, amount: 12.5 }],
    ['a string amount', { order: ORDER, amount: '20' }],
    ['a boolean amount', { order: ORDER, amount: true }],
  ])('bad input fails closed: %s is refused before anything is written', async (_name, effect) => {
    const world = buildGateWorld();
    const proposal = { ...buildProposal(world), effect: effect as never };
    await expect(world.gate.submit(proposal)).rejects.toBeInstanceOf(InvalidEffectError);
    expect(await world.journal.entries(world.gate.effectIdOf(proposal))).toEqual([]);
    expect(world.target.refunds).toEqual([]);
  });

  it('a non-finite number in the premises fails closed', async () => {
    const world = buildGateWorld();
    const proposal = { ...buildProposal(world), premises: { order: ORDER, refunded: Number.NaN } };
    await expect(world.gate.submit(proposal)).rejects.toThrow(/non-finite/);
    expect(world.target.refunds).toEqual([]);
  });
});
