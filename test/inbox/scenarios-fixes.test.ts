import { describe, expect, it } from 'vitest';
import { explainChain, latestEscalation } from '../../server/journal/chain.ts';
import { SimulatedCrash } from '../../server/gate/target.ts';
import { InboxProjection } from '../../server/inbox/projection.ts';
import { summaryItem } from '../../server/inbox/summary.ts';
import { chainState } from '../../server/inbox/state.ts';
import { buildInboxWorld, HOUR_MS, type InboxWorld } from '../support/inbox-world.ts';

async function latest(world: InboxWorld, effectId: string) {
  return latestEscalation(await world.journal.entries(effectId)).escalation!;
}

async function project(world: InboxWorld) {
  const projection = new InboxProjection('inbox');
  for (const { entry } of await world.journal.scan(0, 1_000_000)) projection.apply(entry);
  return projection;
}

/** Run `write` with the inbox writing escalations as it did before they kept the chain and SLA they were routed with. */
async function routedBeforeRoutingWasCopied(world: InboxWorld, write: () => Promise<unknown>): Promise<void> {
  const { journal } = world;
  const appendIf = journal.appendIf;
  const legacy: typeof appendIf = (kind, effectId, check, fields, claim, guard) => {
    const { routing: _routing, ...rest } = fields as { routing?: unknown };
    return appendIf.call(journal, kind, effectId, check, (kind === 'ESCALATED' ? rest : fields) as typeof fields, claim, guard) as ReturnType<typeof appendIf<typeof kind>>;
  };
  journal.appendIf = legacy;
  try {
    await write();
  } finally {
    journal.appendIf = appendIf;
  }
}

describe('inbox: fixes the earlier system needed (test_escalation_fixes.py)', () => {
  it('a resubmission with another amount does not change what the queue shows', async () => {
    // seed: test_escalation_fixes.py test_resubmit_with_other_amount_does_not_change_what_queue_shows
    const world = buildInboxWorld();
    const r = world.request(80);
    await world.inbox.submit(r);
    // Another payload under a used id is refused and writes nothing (our contract, not inbox §6.2's QUEUED).
    const count = (await world.journal.entries(world.effectIdOf(r))).length;
    expect(await world.inbox.submit({ ...r, amount: 30 })).toBe('REFUSED:conflicting_payload');
    expect((await world.journal.entries(world.effectIdOf(r))).length).toBe(count);
    const summary = (await project(world)).chains.get(world.effectIdOf(r))!;
    expect(summaryItem(summary)!.request.amount).toBe(80);
  });

  it('a retry with another amount after a crash before the escalation routes by the bound amount', async () => {
    // seed: test_escalation_fixes.py test_retry_with_other_amount_after_crash_routes_by_bound_amount
    const world = buildInboxWorld();
    const r = world.request(300);
    const id = world.effectIdOf(r);
    await world.journal.append('PROPOSED', id, { agent: 'inbox', lease: null, premises: world.target.capture(r.order as string), effect: { order: r.order as string, amount: 300 }, request: r });
    // The conflicting retry is refused with nothing written; the escalation the crash left owed is
    // finished by the restart sweep, routed by the bound amount.
    expect(await world.inbox.submit({ ...r, amount: 30 })).toBe('REFUSED:conflicting_payload');
    expect((await world.journal.entries(id)).map((e) => e.kind)).toEqual(['PROPOSED']);
    await world.inbox.refresh();
    expect(await latest(world, id)).toMatchObject({ reason: 'needs_judgment', group: 'controller' });
    expect(world.target.refunds).toEqual([]);
  });

  it('an ambiguity outranks a later conflicting retry: the item still says ambiguous and cannot be approved', async () => {
    // seed: test_escalation_fixes.py test_ambiguous_after_conflicting_retry, test_conflicting_retry_before_reconcile
    const world = buildInboxWorld({ tier: 3 });
    const r = world.request(20);
    world.target.injectFault('crash_after');
    await expect(world.inbox.submit(r)).rejects.toBeInstanceOf(SimulatedCrash);
    await world.inbox.options.gate.recover();
    const gate = world.inbox.options.gate;
    const retry = await gate.submit({ agent: 'inbox', lease: world.inbox.policyLease(), requestKey: r.id, premises: world.target.capture(r.order as string), effect: { order: r.order as string, amount: 30 } });
    expect(retry.status).toBe('REFUSED:conflicting_payload');
    const id = world.effectIdOf(r);
    expect(explainChain(await world.journal.entries(id))!.reason).toBe('ambiguous');
    await world.inbox.reconcile(new Map([[id, 'AMBIGUOUS']]));
    expect(await latest(world, id)).toMatchObject({ reason: 'ambiguous', group: 'payments-ops' });
    expect(await world.inbox.approve(id, 'ops')).toBe('REFUSED:ambiguous');
    expect(world.target.refundedTotal(r.order as string)).toBe(20);
  });

  it('a tick after the SLA was removed from the config still moves the item, with no next deadline', async () => {
    // seed: test_escalation_fixes.py test_tick_after_sla_removed_from_config
    // An item routed before escalations kept their chain and SLA reads its route from the config in force.
    const world = buildInboxWorld();
    const r = world.request(80);
    await routedBeforeRoutingWasCopied(world, () => world.inbox.submit(r));
    const noSla = world.newInbox();
    const policy = noSla.options.policy;
    noSla.options.policy = { ...policy, routeByName: (name) => ({ ...policy.routeByName(name)!, slaMs: null }) };
    world.clock.nowMs += 4 * HOUR_MS;
    expect(await noSla.tick()).toEqual(new Map([[world.effectIdOf(r), 'finance-manager']]));
    expect(await latest(world, world.effectIdOf(r))).toMatchObject({ level: 1, due_ms: null, breach: true });
  });

  it("an item keeps the chain and SLA it was routed with when the config's route changes after", async () => {
    const world = buildInboxWorld();
    const r = world.request(80);
    await world.inbox.submit(r);
    const routed = await latest(world, world.effectIdOf(r));
    const changed = world.newInbox();
    const policy = changed.options.policy;
    changed.options.policy = { ...policy, routeByName: (name) => ({ ...policy.routeByName(name)!, chain: ['nobody-else'], slaMs: null }) };
    world.clock.nowMs += 4 * HOUR_MS;
    expect(await changed.tick()).toEqual(new Map([[world.effectIdOf(r), 'finance-manager']]));
    const moved = await latest(world, world.effectIdOf(r));
    expect(moved).toMatchObject({ level: 1, group: 'finance-manager', breach: true, routing: routed.routing });
    expect(moved.due_ms).toBe(routed.due_ms! + routed.routing!.sla_ms!);
  });

  it('a second hand refund after the repair was offered: the restart shows no stale repair', async () => {
    // seed: test_escalation_fixes.py test_restart_after_second_hand_refund_drops_repair
    const world = buildInboxWorld();
    const r = world.request(20);
    let refunds = 0;
    world.target.onTouch = (order) => {
      if (order === r.order && refunds === 0) {
        refunds += 1;
        world.target.refundByHand(order, 30);
      }
    };
    const gate = world.inbox.options.gate;
    await gate.submit({ agent: 'inbox', lease: world.inbox.policyLease(), requestKey: r.id, premises: world.target.capture(r.order as string), effect: { order: r.order as string, amount: 20 }, request: r });
    world.target.refundByHand(r.order as string, 10);
    await world.newInbox().refresh();
    const escalation = await latest(world, world.effectIdOf(r));
    expect(escalation).toMatchObject({ reason: 'stale_premise', repairs: [] });
  });

  it('a crash between the refusal and its escalation, then a restart: nothing is paid twice', async () => {
    // seed: test_escalation_fixes.py test_restart_does_not_overpay
    const world = buildInboxWorld();
    const r = world.request(80);
    await world.inbox.submit(r);
    const id = world.effectIdOf(r);
    await world.inbox.approve(id, 'ana', { execute: false });
    for (let i = 0; i < 3; i++) {
      const fresh = world.newInbox();
      await fresh.refresh();
      await fresh.executeApproved();
    }
    expect(world.target.refundedTotal(r.order as string)).toBe(80);
    expect(chainState(await world.journal.entries(id))).toBe('DONE');
  });

  it("29: a second inbox's approval of an older escalation does not send nor discard the newer approval", async () => {
    // seed: test_escalation_fixes.py test_second_inbox_does_not_discard_newer_approval
    const world = buildInboxWorld();
    const r = world.request(80);
    await world.inbox.submit(r);
    const id = world.effectIdOf(r);
    const first = await latest(world, id);
    await world.inbox.approve(id, 'ana', { execute: false });
    world.target.refundByHand(r.order as string, 10);
    expect(await world.inbox.execute(id)).toBe('REFUSED:stale_premise');
    const second = await latest(world, id);
    await world.inbox.approve(id, 'ana', { execute: false, seen: second.hash });
    expect(await world.newInbox().execute(id, first.hash)).toBe('SUPERSEDED');
    expect(chainState(await world.journal.entries(id))).toBe('APPROVED');
    expect(await world.newInbox().executeApproved()).toEqual(new Map([[id, 'COMMITTED']]));
    expect(world.target.refundedTotal(r.order as string)).toBe(90);
  });

  it('a failed read while nothing is in flight says nothing was sent and writes nothing', async () => {
    // seed: test_escalation_fixes.py test_failed_read_with_nothing_in_flight_says_nothing_was_sent
    const world = buildInboxWorld();
    const r = world.request(20);
    world.inbox.options.capture = async () => {
      throw new Error('Stripe unreachable');
    };
    await expect(world.inbox.submit(r)).rejects.toThrow('Stripe unreachable');
    expect(await world.journal.entries(world.effectIdOf(r))).toEqual([]);
    expect(world.target.refunds).toEqual([]);
  });
});
