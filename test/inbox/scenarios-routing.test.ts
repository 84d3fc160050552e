import { describe, expect, it } from 'vitest';
import { latestEscalation } from '../../server/journal/chain.ts';
import { SimulatedCrash } from '../../server/gate/target.ts';
import { buildInboxWorld, HOUR_MS, type InboxWorld } from '../support/inbox-world.ts';

async function latest(world: InboxWorld, effectId: string) {
  return latestEscalation(await world.journal.entries(effectId));
}

describe('inbox scenarios: routing, decisions, SLA (inbox §24)', () => {
  it('1: amounts 250, 20 flagged and 80 go to controller, risk and ap-leads', async () => {
    // seed: test_routing.py (routing by amount and flag)
    const world = buildInboxWorld();
    const large = world.request(250);
    const flagged = world.request(20, { flagged: true });
    const small = world.request(80);
    for (const r of [large, flagged, small]) expect(await world.inbox.submit(r)).toBe('QUEUED');
    expect((await latest(world, world.effectIdOf(large))).escalation).toMatchObject({ group: 'controller', route: 'large' });
    expect((await latest(world, world.effectIdOf(flagged))).escalation).toMatchObject({ group: 'risk', due_ms: null });
    expect((await latest(world, world.effectIdOf(small))).escalation).toMatchObject({
      group: 'ap-leads',
      routed_to: ['ana'],
      level: 0,
      due_ms: 1_000 + 4 * HOUR_MS,
      route: 'default',
      reason: 'needs_judgment',
      detail: ['amount under $50'],
      breach: false,
    });
  });

  it('2: a tier-3 crash on send goes to payments-ops as ambiguous', async () => {
    const world = buildInboxWorld({ tier: 3 });
    const r = world.request(20);
    world.target.injectFault('crash_after');
    await expect(world.inbox.submit(r)).rejects.toBeInstanceOf(SimulatedCrash);
    const inbox = world.newInbox();
    await inbox.reconcile(await inbox.options.gate.recover());
    expect((await latest(world, world.effectIdOf(r))).escalation).toMatchObject({ group: 'payments-ops', reason: 'ambiguous', detail: 'AMBIGUOUS' });
  });

  it('3: a non-member cannot approve, reject or repair; nothing is written', async () => {
    const world = buildInboxWorld();
    const r = world.request(80);
    await world.inbox.submit(r);
    const id = world.effectIdOf(r);
    const before = (await world.journal.entries(id)).length;
    expect(await world.inbox.approve(id, 'cy')).toBe('REFUSED:lease');
    expect(await world.inbox.reject(id, 'cy')).toBe('REFUSED:lease');
    expect(await world.inbox.repair(id, 'cy', 0)).toBe('REFUSED:lease');
    expect((await world.journal.entries(id)).length).toBe(before);
    expect(world.target.refunds).toEqual([]);
  });

  it('4: an approval is recorded exactly and the send carries it as its lease, on the facts shown', async () => {
    // seed: test_approvals.py (approval recorded and sent under the person's lease)
    const world = buildInboxWorld();
    const r = world.request(80);
    await world.inbox.submit(r);
    const id = world.effectIdOf(r);
    const { escalation } = await latest(world, id);
    world.clock.nowMs = 1_500;
    expect(await world.inbox.approve(id, 'ana')).toBe('COMMITTED');
    const chain = await world.journal.entries(id);
    const decided = chain.find((e) => e.kind === 'DECIDED')!;
    const { effect_id: _e, kind: _k, ts_ms: _t, prev: _p, hash: _h, ...fields } = decided;
    expect(fields).toEqual({ at_ms: 1_500, by: 'ana', decision: 'approve', escalation: escalation!.hash, group: 'ap-leads', members: ['ana'], repair: null, reason: null });
    const dispatched = chain.find((e) => e.kind === 'DISPATCHED')!;
    expect(dispatched.lease).toEqual({ by: 'ana', at_ms: 1_500, group: 'ap-leads', escalation: escalation!.hash });
    expect(dispatched.premises).toEqual(escalation!.facts);
  });

  it('5: an approver removed after approving: the send is refused and the item returns as approver_removed', async () => {
    const world = buildInboxWorld();
    const r = world.request(80);
    await world.inbox.submit(r);
    const id = world.effectIdOf(r);
    expect(await world.inbox.approve(id, 'ana', { execute: false })).toBe('APPROVED');
    world.groups['ap-leads'] = ['bea'];
    world.target.refundByHand(r.order as string, 10);
    expect(await world.inbox.execute(id)).toBe('REFUSED:lease');
    const { escalation } = await latest(world, id);
    expect(escalation).toMatchObject({ reason: 'approver_removed', breach: false, facts: { refunded: 10 } });
    expect((await world.journal.entries(id)).some((e) => e.kind === 'DISPATCHED')).toBe(false);
  });

  it('6: an approval older than 4 h is refused as approval_expired; the new escalation can be approved', async () => {
    const world = buildInboxWorld();
    const r = world.request(80);
    await world.inbox.submit(r);
    const id = world.effectIdOf(r);
    const first = (await latest(world, id)).escalation!;
    await world.inbox.approve(id, 'ana', { execute: false });
    world.clock.nowMs += 5 * HOUR_MS;
    world.target.refundByHand(r.order as string, 30);
    expect(await world.inbox.execute(id)).toBe('REFUSED:lease');
    const second = (await latest(world, id)).escalation!;
    expect(second).toMatchObject({ reason: 'approval_expired', changes: [{ field: 'refunded', was: 0, now: 30 }] });
    expect(await world.inbox.approve(id, 'ana', { seen: first.hash })).toBe('SUPERSEDED');
    expect(await world.inbox.approve(id, 'ana', { seen: second.hash })).toBe('COMMITTED');
    expect(world.target.refundedTotal(r.order as string)).toBe(110);
  });

  it('7: the SLA moves the item to the next group at 4 h; the old group is refused, the new one sends', async () => {
    // seed: test_escalation_flow.py (SLA move up the chain)
    const world = buildInboxWorld();
    const r = world.request(80);
    await world.inbox.submit(r);
    const id = world.effectIdOf(r);
    world.clock.nowMs = 1_000 + 3 * HOUR_MS;
    expect(await world.inbox.tick()).toEqual(new Map());
    world.clock.nowMs = 1_000 + 4 * HOUR_MS;
    expect(await world.inbox.tick()).toEqual(new Map([[id, 'finance-manager']]));
    expect((await latest(world, id)).escalation).toMatchObject({
      level: 1,
      breach: true,
      routed_to: ['fm'],
      due_ms: 1_000 + 8 * HOUR_MS,
      reason: 'needs_judgment',
    });
    expect(await world.inbox.approve(id, 'ana')).toBe('REFUSED:lease');
    expect(await world.inbox.approve(id, 'fm')).toBe('COMMITTED');
  });

  it('8: ticks at +4 h, +8 h and +12 h record the top-of-chain breach once', async () => {
    const world = buildInboxWorld();
    const r = world.request(80);
    await world.inbox.submit(r);
    const id = world.effectIdOf(r);
    const results = [];
    for (const hours of [4, 8, 12]) {
      world.clock.nowMs = 1_000 + hours * HOUR_MS;
      results.push(await world.inbox.tick());
    }
    expect(results[2]).toEqual(new Map());
    const escalations = (await world.journal.entries(id)).filter((e) => e.kind === 'ESCALATED');
    expect(escalations).toHaveLength(3);
    expect(escalations[2]).toMatchObject({ due_ms: null, group: 'finance-manager', level: 1, breach: true });
  });

  it('9: approving with the pre-move hash is SUPERSEDED and writes nothing', async () => {
    const world = buildInboxWorld();
    const r = world.request(80);
    await world.inbox.submit(r);
    const id = world.effectIdOf(r);
    const old = (await latest(world, id)).escalation!;
    world.clock.nowMs = 1_000 + 4 * HOUR_MS;
    await world.inbox.tick();
    const count = (await world.journal.entries(id)).length;
    expect(await world.inbox.approve(id, 'fm', { seen: old.hash })).toBe('SUPERSEDED');
    expect((await world.journal.entries(id)).length).toBe(count);
  });

  it('10: two inboxes approving concurrently: one sends, the other is ALREADY_DECIDED', async () => {
    const world = buildInboxWorld();
    const r = world.request(80);
    await world.inbox.submit(r);
    const id = world.effectIdOf(r);
    const results = await Promise.all([world.inbox.approve(id, 'ana'), world.newInbox().approve(id, 'ana')]);
    expect(results.sort()).toEqual(['ALREADY_DECIDED', 'COMMITTED']);
    expect((await world.journal.entries(id)).filter((e) => e.kind === 'DECIDED')).toHaveLength(1);
    expect(world.target.refundedTotal(r.order as string)).toBe(80);
  });

  it('11: resubmitting an escalated request, or one escalated by a refusal, is QUEUED and writes nothing; another amount is refused', async () => {
    const world = buildInboxWorld();
    const judged = world.request(80);
    await world.inbox.submit(judged);
    const stale = world.request(20);
    world.target.onTouch = (order) => {
      if (order === stale.order && world.target.refundedTotal(order) === 0) world.target.refundByHand(order, 30);
    };
    expect(await world.inbox.submit(stale)).toBe('REFUSED:stale_premise');
    for (const r of [judged, stale]) {
      const id = world.effectIdOf(r);
      const count = (await world.journal.entries(id)).length;
      expect(await world.inbox.submit(r)).toBe('QUEUED');
      expect(await world.inbox.submit({ ...r, amount: 30 })).toBe('REFUSED:conflicting_payload');
      expect((await world.journal.entries(id)).length).toBe(count);
    }
  });

  it('26: an outage past several deadlines catches up on the original schedule', async () => {
    const world = buildInboxWorld();
    const r = world.request(80);
    await world.inbox.submit(r);
    const id = world.effectIdOf(r);
    world.clock.nowMs = 1_000 + 5 * HOUR_MS;
    await world.inbox.tick();
    expect((await latest(world, id)).escalation!.due_ms).toBe(1_000 + 8 * HOUR_MS);
    const outage = buildInboxWorld();
    const r2 = outage.request(80);
    await outage.inbox.submit(r2);
    outage.clock.nowMs = 1_000 + 12 * HOUR_MS;
    expect(await outage.inbox.tick()).toEqual(new Map([[outage.effectIdOf(r2), 'finance-manager']]));
    const steps = (await outage.journal.entries(outage.effectIdOf(r2))).filter((e) => e.kind === 'ESCALATED');
    expect(steps.map((e) => [e.level, e.due_ms, e.breach])).toEqual([
      [0, 1_000 + 4 * HOUR_MS, false],
      [1, 1_000 + 8 * HOUR_MS, true],
      [1, null, true],
    ]);
    expect(await outage.inbox.tick()).toEqual(new Map());
  });

  it('30: a capture that fails for one order does not stop the others moving', async () => {
    const world = buildInboxWorld();
    const broken = world.request(80);
    const fine = world.request(90);
    await world.inbox.submit(broken);
    await world.inbox.submit(fine);
    const errors: string[] = [];
    const inbox = world.newInbox();
    inbox.options.onError = (id) => errors.push(id);
    const capture = inbox.options.capture;
    inbox.options.capture = async (request) => {
      if (request.order === broken.order) throw new Error('read failed');
      return capture(request);
    };
    world.clock.nowMs = 1_000 + 4 * HOUR_MS;
    expect(await inbox.tick()).toEqual(new Map([[world.effectIdOf(fine), 'finance-manager']]));
    expect(errors).toEqual([world.effectIdOf(broken)]);
  });
});
