import { loose } from '../support/entries.ts';
import { describe, expect, it } from 'vitest';
import { latestEscalation } from '../../server/journal/chain.ts';
import { SimulatedCrash, TargetRejectedError } from '../../server/gate/target.ts';
import { childIdFor } from '../../server/inbox/inbox.ts';
import { chainState } from '../../server/inbox/state.ts';
import { buildInboxWorld, type InboxWorld, simulatorPolicy, staleRequest } from '../support/inbox-world.ts';

async function latest(world: InboxWorld, effectId: string) {
  return latestEscalation(await world.journal.entries(effectId));
}

describe('inbox scenarios: repairs, ambiguity, restarts (inbox §24)', () => {
  it('12: a restart rebuilds the same states; a double refresh writes nothing', async () => {
    const world = buildInboxWorld();
    const a = world.request(80);
    const b = world.request(20);
    const c = world.request(90);
    await world.inbox.submit(a);
    await world.inbox.submit(b);
    await world.inbox.submit(c);
    await world.inbox.approve(world.effectIdOf(c), 'ana', { execute: false });
    const states = async () => Promise.all([a, b, c].map(async (r) => chainState(await world.journal.entries(world.effectIdOf(r)))));
    const before = await states();
    const fresh = world.newInbox();
    await fresh.refresh();
    await fresh.refresh();
    expect(await states()).toEqual(before);
    expect(before).toEqual(['ESCALATED', 'DONE', 'APPROVED']);
  });

  it('13: a crash between a refusal and its escalation: two inboxes starting together write one escalation', async () => {
    const world = buildInboxWorld();
    const r = staleRequest(world, 20, 30, 400);
    const gate = world.inbox.options.gate;
    await gate.submit({ agent: 'inbox', lease: world.inbox.policyLease(), requestKey: r.id, premises: world.target.capture(r.order as string), effect: { order: r.order as string, amount: 20 }, request: r });
    const id = world.effectIdOf(r);
    expect(chainState(await world.journal.entries(id))).toBe('NEEDS_ESCALATION');
    await Promise.all([world.newInbox().refresh(), world.newInbox().refresh()]);
    const escalations = (await world.journal.entries(id)).filter((e) => e.kind === 'ESCALATED');
    expect(escalations).toHaveLength(1);
    expect(escalations[0]!.changes).toEqual([{ field: 'refunded', was: 0, now: 30 }]);
  });

  it('14: a binding without an escalation: a new inbox escalates once, a second writes nothing', async () => {
    const world = buildInboxWorld();
    const r = world.request(80);
    const id = world.effectIdOf(r);
    await world.journal.append('PROPOSED', id, { agent: 'inbox', lease: null, premises: world.target.capture(r.order as string), effect: { order: r.order as string, amount: 80 }, request: r });
    await world.newInbox().refresh();
    await world.newInbox().refresh();
    const escalations = (await world.journal.entries(id)).filter((e) => e.kind === 'ESCALATED');
    expect(escalations).toHaveLength(1);
    expect(escalations[0]!.detail).toEqual(['amount under $50']);
  });

  it('15: an approval recorded but not sent is sent once by a new inbox', async () => {
    const world = buildInboxWorld();
    const r = world.request(80);
    await world.inbox.submit(r);
    const id = world.effectIdOf(r);
    await world.inbox.approve(id, 'ana', { execute: false });
    expect(await world.newInbox().executeApproved()).toEqual(new Map([[id, 'COMMITTED']]));
    expect(await world.newInbox().executeApproved()).toEqual(new Map());
    expect(world.target.refundedTotal(r.order as string)).toBe(80);
  });

  it('16: a crash mid-send is settled by recovery and reconciled in a fresh inbox', async () => {
    const world = buildInboxWorld();
    const r = world.request(20);
    world.target.injectFault('crash_after');
    await expect(world.inbox.submit(r)).rejects.toBeInstanceOf(SimulatedCrash);
    const fresh = world.newInbox();
    const recovered = await fresh.options.gate.recover();
    await fresh.reconcile(recovered);
    expect([...recovered.values()]).toEqual(['COMMITTED_BY_RETRY']);
    expect(chainState(await world.journal.entries(world.effectIdOf(r)))).toBe('DONE');
    expect(world.target.refundedTotal(r.order as string)).toBe(20);
  });

  it('17: a crash before the send: submit answers IN_FLIGHT and an unresolved recovery escalates nothing', async () => {
    const world = buildInboxWorld();
    const r = world.request(20);
    world.target.injectFault('crash_before');
    await expect(world.inbox.submit(r)).rejects.toBeInstanceOf(SimulatedCrash);
    const id = world.effectIdOf(r);
    // A real death keeps the sender claim: retake it as the dead sender would still hold it.
    await world.journal.claim(id, 'dead-sender', 60_000);
    expect(await world.inbox.submit(r)).toBe('IN_FLIGHT');
    await world.inbox.reconcile(new Map([[id, 'UNRESOLVED:Error']]));
    expect((await world.journal.entries(id)).some((e) => e.kind === 'ESCALATED')).toBe(false);
  });

  it('18: an ambiguous item cannot be approved, is closed by rejecting, and is never resent', async () => {
    const world = buildInboxWorld({ tier: 3 });
    const r = world.request(20);
    world.target.injectFault('crash_after');
    await expect(world.inbox.submit(r)).rejects.toBeInstanceOf(SimulatedCrash);
    await world.inbox.reconcile(await world.inbox.options.gate.recover());
    const id = world.effectIdOf(r);
    expect(await world.inbox.approve(id, 'ops')).toBe('REFUSED:ambiguous');
    expect(await world.inbox.repair(id, 'ops', 0)).toBe('REFUSED:no_repair');
    expect(await world.inbox.reject(id, 'ops')).toBe('REJECTED');
    const gateStatus = await world.inbox.options.gate.submit({ agent: 'inbox', lease: world.inbox.policyLease(), requestKey: r.id, premises: {}, effect: { order: r.order as string, amount: 20 } });
    expect(gateStatus.status).toBe('AMBIGUOUS');
    expect((await world.journal.entries(id)).filter((e) => e.kind === 'DISPATCHED')).toHaveLength(1);
    expect(world.target.refundedTotal(r.order as string)).toBe(20);
  });

  /** Submit over the limit, approve, and let the hand refund make the send stale: the item comes back with repairs. */
  async function staleApproved(world: InboxWorld, amount: number, handCents: number, orderAmount = 100) {
    const r = staleRequest(world, amount, handCents, orderAmount);
    expect(await world.inbox.submit(r)).toBe('QUEUED');
    const id = world.effectIdOf(r);
    const group = (await latest(world, id)).escalation!.group as string;
    expect(await world.inbox.approve(id, world.groups[group]![0]!)).toBe('REFUSED:stale_premise');
    return { r, id, escalation: (await latest(world, id)).escalation! };
  }

  it('19: a repair with a new amount is a new request that sends once and closes the original', async () => {
    // seed: test_repair.py (refund_remaining accepted as a new decision)
    const world = buildInboxWorld();
    const { r, id, escalation } = await staleApproved(world, 80, 30);
    expect(escalation).toMatchObject({ reason: 'stale_premise', repairs: [{ code: 'refund_remaining', set: { amount: 70 } }] });
    expect(await world.inbox.repair(id, 'ana', 0)).toBe('COMMITTED');
    const childId = childIdFor(r.id, escalation.hash);
    const child = await world.journal.entries(world.effectIdOf({ ...r, id: childId }));
    expect(loose(child[0]).request).toMatchObject({ id: childId, repair_of: r.id, amount: 70 });
    expect(loose(child.find((e) => e.kind === 'DISPATCHED')).effect).toEqual({ order: r.order, amount: 70 });
    const parent = await world.journal.entries(id);
    expect(parent.some((e) => e.kind === 'DISPATCHED')).toBe(false);
    expect(loose(parent.find((e) => e.kind === 'DECIDED' && e.decision === 'repair')).repair).toEqual({ code: 'refund_remaining', set: { amount: 70 }, request_id: childId });
    const direct = await world.inbox.options.gate.submit({ agent: 'inbox', lease: world.inbox.policyLease(), requestKey: r.id, premises: {}, effect: { order: r.order as string, amount: 70 } });
    expect(direct.status).toBe('REFUSED:conflicting_payload');
    expect(world.target.refundedTotal(r.order as string)).toBe(100);
  });

  it.each([
    [['cy'], 'QUEUED'],
    [['cy', 'ana'], 'COMMITTED'],
  ])('20: a repair child routed to controller %j: the repairer decides it only as a member (%s)', async (controllers, expected) => {
    const stale = { name: 'stale', chain: ['ap-leads'], slaMs: null, when: (i: { reason: string }) => i.reason === 'stale_premise' };
    const world = buildInboxWorld({ policy: simulatorPolicy({ firstRoutes: [stale] }) });
    const { r, id } = await staleApproved(world, 280, 30, 300);
    world.groups.controller = [...controllers];
    const status = await world.inbox.repair(id, 'ana', 0);
    expect(status).toBe(expected);
    const childEid = world.effectIdOf({ ...r, id: childIdFor(r.id, (await latest(world, id)).escalation!.hash) });
    const childChain = await world.journal.entries(childEid);
    expect(latestEscalation(childChain).escalation).toMatchObject({ reason: 'needs_judgment', group: 'controller' });
    if (expected === 'COMMITTED') {
      expect(childChain.filter((e) => e.kind === 'DECIDED')).toMatchObject([{ by: 'ana', group: 'controller' }]);
    }
  });

  it('21: the world moves before the repair is accepted: SUPERSEDED, re-shown without repairs', async () => {
    const world = buildInboxWorld();
    const { r, id } = await staleApproved(world, 80, 30);
    world.target.refundByHand(r.order as string, 10);
    expect(await world.inbox.repair(id, 'ana', 0)).toBe('SUPERSEDED');
    const escalations = (await world.journal.entries(id)).filter((e) => e.kind === 'ESCALATED');
    expect(escalations).toHaveLength(3);
    expect(escalations[2]).toMatchObject({ reason: 'stale_premise', repairs: [], changes: [{ field: 'refunded', was: 30, now: 40 }] });
    expect((await world.journal.entries(id)).filter((e) => e.kind === 'DECIDED' && e.decision === 'repair')).toEqual([]);
    expect(await world.inbox.repair(id, 'ana', 0)).toBe('REFUSED:no_repair');
  });

  it('22: accepting a repair twice, or concurrently, decides once and sends one child', async () => {
    const world = buildInboxWorld();
    const { id } = await staleApproved(world, 80, 30);
    expect(await world.inbox.repair(id, 'ana', 0)).toBe('COMMITTED');
    expect(await world.inbox.repair(id, 'ana', 0)).toBe('ALREADY_DECIDED');
    const other = buildInboxWorld();
    const stale = await staleApproved(other, 80, 30);
    const results = await Promise.all([other.inbox.repair(stale.id, 'ana', 0), other.newInbox().repair(stale.id, 'ana', 0)]);
    expect(results.filter((s) => s === 'COMMITTED')).toHaveLength(1);
    expect(results.filter((s) => s !== 'COMMITTED').every((s) => s === 'ALREADY_DECIDED' || s === 'SUPERSEDED')).toBe(true);
    expect(other.target.refundedTotal(stale.r.order as string)).toBe(100);
  });

  it('23: a repair while the original is in flight or committed is ALREADY_DECIDED', async () => {
    const world = buildInboxWorld();
    const { id, escalation } = await staleApproved(world, 80, 30);
    await world.journal.append('DISPATCHED', id, { effect: {}, lease: null, premises: {}, checks: { lease_live: true, lease: null } });
    expect(await world.inbox.repair(id, 'ana', 0, { seen: escalation.hash })).toBe('ALREADY_DECIDED');
  });

  it('24: a crash between the repair decision and the child: the restart submits the child once on the repair facts', async () => {
    const world = buildInboxWorld();
    const { r, id, escalation } = await staleApproved(world, 80, 30);
    const inbox = world.newInbox();
    inbox.submit = async () => {
      throw new SimulatedCrash('died before the child');
    };
    await expect(inbox.repair(id, 'ana', 0)).rejects.toBeInstanceOf(SimulatedCrash);
    const fresh = world.newInbox();
    await fresh.refresh();
    await fresh.refresh();
    const childEid = world.effectIdOf({ ...r, id: childIdFor(r.id, escalation.hash) });
    const child = await world.journal.entries(childEid);
    expect(child.filter((e) => e.kind === 'ESCALATED')).toHaveLength(1);
    expect(loose(child[0]).premises).toEqual(escalation.facts);
    expect(await fresh.approve(childEid, 'ana')).toBe('COMMITTED');
    expect(world.target.refundedTotal(r.order as string)).toBe(100);
  });

  it('25: after an accepted repair, a direct policy send of the original is REFUSED:closed', async () => {
    const world = buildInboxWorld();
    const { r, id } = await staleApproved(world, 80, 30);
    await world.inbox.repair(id, 'ana', 0);
    const direct = await world.inbox.options.gate.submit({ agent: 'inbox', lease: world.inbox.policyLease(), requestKey: r.id, premises: world.target.capture(r.order as string), effect: { order: r.order as string, amount: 80 } });
    expect(direct.status).toBe('REFUSED:closed');
  });

  it('28: a policy retry after a stale refusal keeps the reason and the still_fits repair', async () => {
    const world = buildInboxWorld();
    const r = staleRequest(world, 20, 30, 400);
    await world.inbox.submit(r);
    const id = world.effectIdOf(r);
    const retry = await world.inbox.options.gate.submit({ agent: 'inbox', lease: world.inbox.policyLease(), requestKey: r.id, premises: world.target.capture(r.order as string), effect: { order: r.order as string, amount: 20 } });
    expect(retry.status).toBe('REFUSED:stale_premise');
    await world.newInbox().refresh();
    expect((await latest(world, id)).escalation).toMatchObject({ reason: 'stale_premise', repairs: [{ code: 'still_fits' }] });
  });

  it('32: a partial hand refund right after capture: stale, still_fits, approved, and the receipt names the approver', async () => {
    const world = buildInboxWorld();
    const r = staleRequest(world, 20, 30, 400);
    expect(await world.inbox.submit(r)).toBe('REFUSED:stale_premise');
    const id = world.effectIdOf(r);
    expect((await latest(world, id)).escalation!.repairs).toMatchObject([{ code: 'still_fits' }]);
    expect(await world.inbox.approve(id, 'ana')).toBe('COMMITTED');
    expect(world.target.refundedTotal(r.order as string)).toBe(50);
    const other = buildInboxWorld();
    const r2 = staleRequest(other, 20, 30, 400);
    await other.inbox.submit(r2);
    expect(await other.inbox.repair(other.effectIdOf(r2), 'ana', 0)).toBe('COMMITTED');
    const decided = (await other.journal.entries(other.effectIdOf(r2))).find((e) => e.kind === 'DECIDED')!;
    expect(decided).toMatchObject({ decision: 'approve', repair: { code: 'still_fits', set: {}, request_id: r2.id } });
  });

  it('33: a definite rejection by the target escalates as target_error, exactly once across recoveries', async () => {
    const world = buildInboxWorld();
    const r = world.request(20);
    const apply = world.target.apply.bind(world.target);
    world.target.apply = async () => {
      throw new TargetRejectedError('400 charge_disputed');
    };
    expect(await world.inbox.submit(r)).toBe('REFUSED:target_error');
    const id = world.effectIdOf(r);
    for (let i = 0; i < 3; i++) await world.inbox.reconcile(await world.inbox.options.gate.recover());
    world.target.apply = apply;
    const escalations = (await world.journal.entries(id)).filter((e) => e.kind === 'ESCALATED');
    expect(escalations).toHaveLength(1);
    expect(escalations[0]).toMatchObject({ reason: 'target_error', group: 'payments-ops' });
    expect(world.target.refunds).toEqual([]);
  });
});

describe('repair child chains', () => {
  it('a repair is refused, and the original stays open, when the child id is already bound to another payload', async () => {
    const world = buildInboxWorld();
    const r = world.request(80);
    world.target.orders.get(r.order as string)!.amountCents = 100;
    await world.inbox.submit(r);
    const id = world.effectIdOf(r);
    world.target.refundByHand(r.order as string, 30);
    expect(await world.inbox.approve(id, 'ana')).toBe('REFUSED:stale_premise');
    const escalation = latestEscalation(await world.journal.entries(id)).escalation!;
    // Someone binds the child's id first, with a payload nobody was shown as this repair.
    const squat = { ...world.request(90), id: childIdFor(r.id, escalation.hash) };
    expect(await world.inbox.submit(squat)).toBe('QUEUED');
    expect(await world.inbox.repair(id, 'ana', 0, { seen: escalation.hash })).toBe('REFUSED:repair_not_expressible');
    expect(chainState(await world.journal.entries(id))).toBe('ESCALATED');
    expect(world.target.refunds.filter((x) => x.effectId !== 'dashboard')).toEqual([]);
  });
});
