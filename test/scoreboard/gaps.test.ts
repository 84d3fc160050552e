import { describe, expect, it } from 'vitest';
import { latestEscalation } from '../../server/journal/chain.ts';
import { SimulatedCrash } from '../../server/gate/target.ts';
import { computeScoreboard } from '../../server/scoreboard/figures.ts';
import { ScoreboardProjection } from '../../server/scoreboard/projection.ts';
import { buildInboxWorld, type InboxWorld } from '../support/inbox-world.ts';

const MINUTE_MS = 60_000;

/** The board from scratch, checked against the board kept up to date entry by entry. */
async function board(world: InboxWorld) {
  const entries = (await world.journal.scan(0, 1_000_000)).map((s) => s.entry);
  const projection = new ScoreboardProjection('inbox');
  for (const entry of entries) projection.note(entry);
  const computed = computeScoreboard(entries, 'inbox');
  expect(await projection.board()).toEqual(computed);
  return computed;
}

async function escalationsOf(world: InboxWorld, effectId: string) {
  return (await world.journal.entries(effectId)).filter((e) => e.kind === 'ESCALATED');
}

/**
 * The item offers refund_remaining; the world moves before the person accepts it, so the repair is
 * SUPERSEDED and the item is shown again without repairs: the same trip to a person, not a new one.
 */
async function supersedeTheRepair(world: InboxWorld, effectId: string, order: string, by: string) {
  const offered = latestEscalation(await world.journal.entries(effectId)).escalation!;
  expect(offered.repairs).toMatchObject([{ code: 'refund_remaining' }]);
  world.target.refundByHand(order, 10);
  world.clock.nowMs += 5 * MINUTE_MS;
  expect(await world.inbox.repair(effectId, by, 0)).toBe('SUPERSEDED');
  expect(latestEscalation(await world.journal.entries(effectId)).escalation).toMatchObject({ reason: offered.reason, repairs: [], breach: false });
}

describe('scoreboard: a superseded repair is the same trip to a person', () => {
  it('after a crash: one escalation, one crash_to_person, one repair suggested, and the wait runs from the first showing', async () => {
    // seed: test_escalation_fixes.py test_superseded_repair_after_crash
    const world = buildInboxWorld();
    const r = world.request(40);
    const order = r.order as string;
    world.target.orders.get(order)!.amountCents = 100;
    world.target.injectFault('crash_before');
    await expect(world.inbox.submit(r)).rejects.toBeInstanceOf(SimulatedCrash);
    // 70 refunded by hand while the sender was down: 40 no longer fits, 30 is what is left.
    world.target.refundByHand(order, 70);
    const inbox = world.newInbox();
    await inbox.reconcile(await inbox.options.gate.recover());
    const id = world.effectIdOf(r);
    const firstShownAt = (await escalationsOf(world, id))[0]!.at_ms as number;
    await supersedeTheRepair(world, id, order, 'ops');
    expect(await escalationsOf(world, id)).toHaveLength(2);
    expect(await board(world)).toMatchObject({
      requests: 1,
      escalated: 1,
      escalated_by_reason: { stale_premise_at_recovery: 1 },
      crash_to_person: 1,
      repairs_suggested: 1,
      sla_breaches: 0,
      open: 1,
    });
    world.clock.nowMs = firstShownAt + 20 * MINUTE_MS;
    expect(await world.inbox.reject(id, 'ops')).toBe('REJECTED');
    expect(await board(world)).toMatchObject({
      escalated_by_reason: { stale_premise_at_recovery: 1 },
      crash_to_person: 1,
      repairs_suggested: 1,
      rejected: 1,
      open: 0,
      time_to_decision: { n: 1, median_ms: 20 * MINUTE_MS },
    });
    expect(world.target.refunds.filter((refund) => refund.effectId === id)).toEqual([]);
  });

  it('after a stale approval: one escalated chain, one stale approval caught, one repair suggested', async () => {
    // seed: test_escalation_fixes.py test_superseded_repair_after_stale_approval
    const world = buildInboxWorld();
    const r = world.request(80);
    const order = r.order as string;
    world.target.orders.get(order)!.amountCents = 100;
    expect(await world.inbox.submit(r)).toBe('QUEUED');
    const id = world.effectIdOf(r);
    // 30 refunded by hand after ana saw the item: her approval is stale when it is sent.
    world.target.refundByHand(order, 30);
    world.clock.nowMs += 10 * MINUTE_MS;
    expect(await world.inbox.approve(id, 'ana')).toBe('REFUSED:stale_premise');
    await supersedeTheRepair(world, id, order, 'ana');
    expect(await escalationsOf(world, id)).toHaveLength(3);
    expect(await board(world)).toMatchObject({
      requests: 1,
      escalated: 1,
      escalated_by_reason: { needs_judgment: 1, stale_premise: 1 },
      stale_approvals_caught: 1,
      crash_to_person: 0,
      repairs_suggested: 1,
      sla_breaches: 0,
      open: 1,
      time_to_decision: { n: 1, median_ms: 10 * MINUTE_MS },
    });
    expect(world.target.refunds.filter((refund) => refund.effectId === id)).toEqual([]);
  });
});
