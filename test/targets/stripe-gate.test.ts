import { loose } from '../support/entries.ts';
import Stripe from 'stripe';
import { describe, expect, it, vi } from 'vitest';
import { EFFECT_METADATA_KEY } from '../../server/targets/stripe-refunds.ts';
import { buildStripeWorld } from './stripe-world.ts';

const HOUR_MS = 3_600_000;
const CLAIM_TTL_MS = 5_000;

/** The effect's entry kinds, in order. */
async function kindsOf(world: Awaited<ReturnType<typeof buildStripeWorld>>, effectId: string): Promise<string[]> {
  return (await world.journal.entries(effectId)).map((entry) => entry.kind);
}

describe('the gate over Stripe refunds (real SDK, sandbox, SQLite journal)', () => {
  it('submit: live lease and facts that hold commit exactly one refund; a resubmit is DUPLICATE_IGNORED', async () => {
    const world = await buildStripeWorld();
    const proposal = await world.proposal();
    const outcome = await world.gate.submit(proposal);
    expect(outcome.status).toBe('COMMITTED');
    const ledger = world.sandbox.refunds(world.intent.id);
    expect(ledger).toHaveLength(1);
    expect(ledger[0]).toMatchObject({ amount: 2_000, metadata: { [EFFECT_METADATA_KEY]: outcome.effectId } });
    expect((await world.journal.entries(outcome.effectId)).at(-1)).toMatchObject({
      kind: 'COMMITTED',
      result: { status: 'ok', refund: ledger[0]!.id, amount: 2_000 },
    });
    expect((await world.gate.submit(proposal)).status).toBe('DUPLICATE_IGNORED');
    expect(world.sandbox.refunds(world.intent.id)).toHaveLength(1);
  });

  it('submit: a hand refund after the decision refuses as REFUSED:stale_premise, with the change and repairs', async () => {
    const world = await buildStripeWorld();
    const proposal = await world.proposal();
    world.sandbox.handRefund(world.intent.id, 4_000);
    const outcome = await world.gate.submit(proposal);
    expect(outcome.status).toBe('REFUSED:stale_premise');
    expect((await world.journal.entries(outcome.effectId)).at(-1)).toMatchObject({
      kind: 'REFUSED',
      code: 'stale_premise',
      changes: [
        { field: 'refunded_by_others', was: 0, now: 4_000 },
        { field: 'refunded_outside', was: 0, now: 4_000 },
      ],
      repairs: [{ code: 'refund_remaining', set: { amount: 1_000 } }],
    });
    expect(world.sandbox.refunds(world.intent.id).map((r) => r.amount)).toEqual([4_000]);
  });

  it('submit: a 400 from Stripe settles as REFUSED:target_error and is never sent again, by recover or by a resubmit', async () => {
    // seed: test_merge_defects.py test_a_settled_target_error_is_never_sent_again
    const world = await buildStripeWorld();
    const apply = vi.spyOn(world.target, 'apply');
    // Decided on a disputed charge, which nothing since has changed: the facts hold, and Stripe
    // answers charge_disputed (a refund larger than what is left is refused before sending instead).
    world.sandbox.openDispute(world.intent.id);
    const proposal = await world.proposal();
    const outcome = await world.gate.submit(proposal);
    expect(outcome.status).toBe('REFUSED:target_error');
    expect((await world.journal.entries(outcome.effectId)).at(-1)).toMatchObject({ code: 'target_error', resolves: true });
    world.clock.advance(CLAIM_TTL_MS + 120_000);
    expect(Object.fromEntries(await world.newGate().recover())).toEqual({});
    expect((await world.gate.submit(proposal)).status).toBe('REFUSED:target_error');
    expect(apply).toHaveBeenCalledTimes(1);
    expect(world.sandbox.refunds(world.intent.id)).toEqual([]);
  });

  it('submit: more than is left to refund is refused before sending, with the repair, though nothing moved since the decision', async () => {
    const world = await buildStripeWorld();
    const apply = vi.spyOn(world.target, 'apply');
    const outcome = await world.gate.submit(await world.proposal({ amountCents: 6_000 }));
    expect(outcome.status).toBe('REFUSED:stale_premise');
    expect((await world.journal.entries(outcome.effectId)).at(-1)).toMatchObject({
      kind: 'REFUSED',
      code: 'stale_premise',
      reason: ['amount: $60.00 is more than the $50.00 left to refund'],
      repairs: [{ code: 'refund_remaining', set: { amount: 5_000 } }],
    });
    expect(apply).not.toHaveBeenCalled();
    expect(world.sandbox.refunds(world.intent.id)).toEqual([]);
  });

  it('submit: a 400 whose lookup finds the refund (sent earlier under a key Stripe no longer holds) is COMMITTED_ON_QUERY', async () => {
    const world = await buildStripeWorld();
    const proposal = await world.proposal();
    const effectId = world.gate.effectIdOf(proposal);
    // The earlier send refunded the whole charge, so Stripe answers this one with charge_already_refunded.
    const earlier = await world.sandbox.stripe().refunds.create({
      payment_intent: world.intent.id,
      amount: 5_000,
      metadata: { [EFFECT_METADATA_KEY]: effectId },
    });
    const outcome = await world.gate.submit(proposal);
    expect(outcome.status).toBe('COMMITTED_ON_QUERY');
    expect((await world.journal.entries(effectId)).at(-1)).toMatchObject({ kind: 'COMMITTED', via: 'failed-but-landed', found: earlier.id });
    expect(world.sandbox.refunds(world.intent.id).map((r) => r.id)).toEqual([earlier.id]);
  });

  it('submit: a dropped connection leaves the effect IN_FLIGHT; after the claim TTL recover resends under the same key: COMMITTED_BY_RETRY, one refund', async () => {
    const world = await buildStripeWorld({ claimTtlMs: CLAIM_TTL_MS });
    const proposal = await world.proposal();
    world.sandbox.setFault({ on: 'refund_create', action: 'drop_after_commit', times: 2 });
    await expect(world.gate.submit(proposal)).rejects.toBeInstanceOf(Stripe.errors.StripeConnectionError);
    const effectId = world.gate.effectIdOf(proposal);
    expect(await world.journal.inFlight()).toEqual([effectId]);
    expect((await world.gate.submit(proposal)).status).toBe('IN_FLIGHT');
    // The sender's claim still stands: nobody may resend before it runs out.
    expect(Object.fromEntries(await world.newGate().recover())).toEqual({});
    world.clock.advance(CLAIM_TTL_MS);
    expect(Object.fromEntries(await world.newGate().recover())).toEqual({ [effectId]: 'COMMITTED_BY_RETRY' });
    const ledger = world.sandbox.refunds(world.intent.id);
    expect(ledger).toHaveLength(1);
    expect((await world.journal.entries(effectId)).at(-1)).toMatchObject({
      via: 'retry-idempotent',
      result: { status: 'already_processed', refund: ledger[0]!.id },
    });
    expect(await world.journal.inFlight()).toEqual([]);
  });

  it('recover: past the key window (25 h) it looks the refund up instead of resending: COMMITTED_ON_QUERY, never a second refund', async () => {
    const world = await buildStripeWorld({ claimTtlMs: CLAIM_TTL_MS });
    const proposal = await world.proposal();
    world.sandbox.setFault({ on: 'refund_create', action: 'drop_after_commit', times: 2 });
    await expect(world.gate.submit(proposal)).rejects.toBeInstanceOf(Stripe.errors.StripeConnectionError);
    const effectId = world.gate.effectIdOf(proposal);
    world.clock.advance(25 * HOUR_MS);
    world.sandbox.advanceClock(25 * HOUR_MS);
    expect(Object.fromEntries(await world.newGate().recover())).toEqual({ [effectId]: 'COMMITTED_ON_QUERY' });
    const ledger = world.sandbox.refunds(world.intent.id);
    expect(ledger).toHaveLength(1);
    expect((await world.journal.entries(effectId)).at(-1)).toMatchObject({ via: 'recovery-query', found: ledger[0]!.id });
    // Why the lookup matters: Stripe has forgotten the key, so a resend now would refund a second time.
    expect(await world.target.apply(effectId, proposal.effect)).toMatchObject({ status: 'ok', refund: expect.not.stringMatching(ledger[0]!.id) });
  });

  it('recover: a refund that landed before a hand refund is committed on lookup, not refused, though the recheck fails', async () => {
    const world = await buildStripeWorld({ claimTtlMs: CLAIM_TTL_MS });
    const proposal = await world.proposal();
    world.sandbox.setFault({ on: 'refund_create', action: 'drop_after_commit', times: 2 });
    await expect(world.gate.submit(proposal)).rejects.toBeInstanceOf(Stripe.errors.StripeConnectionError);
    world.sandbox.handRefund(world.intent.id, 1_000);
    world.clock.advance(CLAIM_TTL_MS);
    const effectId = world.gate.effectIdOf(proposal);
    expect(Object.fromEntries(await world.newGate().recover())).toEqual({ [effectId]: 'COMMITTED_ON_QUERY' });
    expect(world.sandbox.refunds(world.intent.id).map((r) => r.amount)).toEqual([2_000, 1_000]);
  });

  it('recover: a saved 500 replays under the same key, so recovery stays UNRESOLVED and sends nothing until the key window passes, then reapplies once', async () => {
    const world = await buildStripeWorld({ claimTtlMs: CLAIM_TTL_MS });
    const proposal = await world.proposal();
    world.sandbox.setFault({ on: 'refund_create', action: 'error_500' });
    await expect(world.gate.submit(proposal)).rejects.toBeInstanceOf(Stripe.errors.StripeAPIError);
    const effectId = world.gate.effectIdOf(proposal);
    world.clock.advance(CLAIM_TTL_MS);
    // The name after the colon is the error's `name`, which Stripe's errors leave as plain "Error".
    expect(Object.fromEntries(await world.newGate().recover())).toEqual({ [effectId]: expect.stringMatching(/^UNRESOLVED:/) });
    expect(world.sandbox.refunds(world.intent.id)).toEqual([]);
    expect(await kindsOf(world, effectId)).toEqual(['PROPOSED', 'AUTHORIZED', 'DISPATCHED']);
    world.clock.advance(25 * HOUR_MS);
    world.sandbox.advanceClock(25 * HOUR_MS);
    expect(Object.fromEntries(await world.newGate().recover())).toEqual({ [effectId]: 'REAPPLIED_AFTER_QUERY' });
    expect(world.sandbox.refunds(world.intent.id).map((r) => r.amount)).toEqual([2_000]);
  });

  it('recover: a dispute opened while the effect was in flight and unsent refuses it as REFUSED:stale_premise_at_recovery', async () => {
    const world = await buildStripeWorld({ claimTtlMs: CLAIM_TTL_MS });
    const proposal = await world.proposal();
    world.sandbox.setFault({ on: 'refund_create', action: 'error_500' });
    await expect(world.gate.submit(proposal)).rejects.toBeInstanceOf(Stripe.errors.StripeAPIError);
    world.sandbox.openDispute(world.intent.id);
    world.clock.advance(CLAIM_TTL_MS);
    const effectId = world.gate.effectIdOf(proposal);
    expect(Object.fromEntries(await world.newGate().recover())).toEqual({ [effectId]: 'REFUSED:stale_premise_at_recovery' });
    expect((await world.journal.entries(effectId)).at(-1)).toMatchObject({
      changes: [{ field: 'disputed', was: false, now: true }],
    });
    expect(loose((await world.journal.entries(effectId)).at(-1)).repairs).toBeUndefined();
    expect(world.sandbox.refunds(world.intent.id)).toEqual([]);
  });
});
