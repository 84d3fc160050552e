import { loose } from '../support/entries.ts';
import { describe, expect, it } from 'vitest';
import { MemoryJournal } from '../../db/journal-store.ts';
import type { Entry } from '../../shared/entries.ts';
import { latestEscalation } from '../../server/journal/chain.ts';
import { InboxProjection } from '../../server/inbox/projection.ts';
import { JournalFollower } from '../../server/live/follower.ts';
import { buildInboxWorld, HOUR_MS, type InboxWorld } from '../support/inbox-world.ts';
import { type CountingJournal, countingJournal, narrowedInbox } from '../support/inbox-work.ts';

// The background sweeps read only the chains that can need work, as the projection names them,
// and still decide on the chain read from the journal.

function countedWorld(): InboxWorld & { journal: CountingJournal } {
  let world: InboxWorld | undefined;
  const journal = countingJournal(new MemoryJournal({ wallClockMs: () => world!.clock.wallMs }));
  world = buildInboxWorld({ journal });
  return { ...world, journal };
}

/** Submit `count` routine requests: each is sent under policy and settles as DONE. */
async function settle(world: InboxWorld, count: number): Promise<void> {
  for (let i = 0; i < count; i++) expect(await world.inbox.submit(world.request(20))).toBe('COMMITTED');
}

/** The chains read while `run` runs. */
async function readsDuring(journal: CountingJournal, run: () => Promise<unknown>): Promise<string[]> {
  journal.reads.length = 0;
  await run();
  return [...journal.reads];
}

async function escalations(world: InboxWorld, effectId: string): Promise<Entry[]> {
  return (await world.journal.entries(effectId)).filter((e) => e.kind === 'ESCALATED');
}

describe('inbox work: sweeps read only the chains that can need work', () => {
  it('tick: with many settled chains, reads only the escalations that are due, each once', async () => {
    const world = countedWorld();
    await settle(world, 40);
    const early = [world.request(80), world.request(250)];
    for (const r of early) await world.inbox.submit(r);
    await world.inbox.submit(world.request(20, { flagged: true }));
    world.clock.nowMs = 1_000 + 2 * HOUR_MS;
    const later = world.request(90);
    await world.inbox.submit(later);
    const { inbox } = narrowedInbox(world);

    world.clock.nowMs = 1_000 + 4 * HOUR_MS;
    let moved = new Map<string, string>();
    const reads = await readsDuring(world.journal, async () => {
      moved = await inbox.tick();
    });
    const earlyIds = early.map((r) => world.effectIdOf(r));
    expect(moved).toEqual(new Map([[earlyIds[0]!, 'finance-manager'], [earlyIds[1]!, 'finance-manager']]));
    expect(reads.sort()).toEqual([...earlyIds].sort());
    expect(await readsDuring(world.journal, () => inbox.tick())).toEqual([]);

    world.clock.nowMs = 1_000 + 6 * HOUR_MS;
    expect(await readsDuring(world.journal, () => inbox.tick())).toEqual([world.effectIdOf(later)]);
  });

  it('tick: deadlines missed while nothing ran are all caught up on the first tick of a new inbox', async () => {
    const world = countedWorld();
    await settle(world, 5);
    const r = world.request(80);
    await world.inbox.submit(r);
    const id = world.effectIdOf(r);
    world.clock.nowMs = 1_000 + 12 * HOUR_MS;
    const { inbox } = narrowedInbox(world);
    expect(await inbox.tick()).toEqual(new Map([[id, 'finance-manager']]));
    expect((await escalations(world, id)).map((e) => [loose(e).level, loose(e).due_ms, loose(e).breach])).toEqual([
      [0, 1_000 + 4 * HOUR_MS, false],
      [1, 1_000 + 8 * HOUR_MS, true],
      [1, null, true],
    ]);
    expect(await readsDuring(world.journal, () => inbox.tick())).toEqual([]);
  });

  it('tick: an escalation another process wrote after this inbox caught up is moved, once, by either', async () => {
    const world = countedWorld();
    const { inbox } = narrowedInbox(world);
    expect(await inbox.tick()).toEqual(new Map());
    const r = world.request(80);
    await world.newInbox().submit(r);
    world.clock.nowMs = 1_000 + 4 * HOUR_MS;
    const other = narrowedInbox(world).inbox;
    const results = await Promise.all([inbox.tick(), other.tick()]);
    expect(results.flatMap((m) => [...m.values()])).toEqual(['finance-manager']);
    expect(await escalations(world, world.effectIdOf(r))).toHaveLength(2);
  });

  it('tick: an answered escalation is not read; executeApproved reads the approval once and sends it once', async () => {
    const world = countedWorld();
    await settle(world, 10);
    const r = world.request(80);
    await world.inbox.submit(r);
    const id = world.effectIdOf(r);
    const { inbox } = narrowedInbox(world);
    expect(await inbox.approve(id, 'ana', { execute: false })).toBe('APPROVED');
    world.clock.nowMs = 1_000 + HOUR_MS;
    expect(await readsDuring(world.journal, () => inbox.tick())).toEqual([]);
    let sent = new Map();
    const reads = await readsDuring(world.journal, async () => {
      sent = await inbox.executeApproved();
    });
    expect(sent).toEqual(new Map([[id, 'COMMITTED']]));
    expect(reads[0]).toBe(id);
    expect(new Set(reads)).toEqual(new Set([id]));
    expect(await readsDuring(world.journal, () => inbox.executeApproved())).toEqual([]);
    expect(world.target.refundedTotal(r.order as string)).toBe(80);
  });

  it('executeApproved: an approval that expired comes back to a person, and its new deadline is ticked', async () => {
    const world = countedWorld();
    const r = world.request(80);
    await world.inbox.submit(r);
    const id = world.effectIdOf(r);
    const { inbox } = narrowedInbox(world);
    await inbox.approve(id, 'ana', { execute: false });
    world.clock.nowMs = 1_000 + 5 * HOUR_MS;
    expect(await inbox.executeApproved()).toEqual(new Map([[id, 'REFUSED:lease']]));
    const back = latestEscalation(await world.journal.entries(id)).escalation!;
    expect(back).toMatchObject({ reason: 'approval_expired', level: 0, due_ms: 1_000 + 9 * HOUR_MS });
    expect(await inbox.executeApproved()).toEqual(new Map());
    world.clock.nowMs = 1_000 + 9 * HOUR_MS;
    expect(await readsDuring(world.journal, async () => expect(await inbox.tick()).toEqual(new Map([[id, 'finance-manager']])))).toEqual([id]);
    expect(world.target.refundedTotal(r.order as string)).toBe(0);
  });

  it('refresh: reads only chains left half done (a binding never escalated, an owed escalation)', async () => {
    const world = countedWorld();
    await settle(world, 20);
    const open = world.request(80);
    await world.inbox.submit(open);
    const bound = world.request(80);
    const boundId = world.effectIdOf(bound);
    await world.journal.append('PROPOSED', boundId, { agent: 'inbox', lease: null, premises: world.target.capture(bound.order as string), effect: { order: bound.order as string, amount: 80 }, request: bound });
    const owed = world.request(20);
    const premises = world.target.capture(owed.order as string);
    world.target.refundByHand(owed.order as string, 50);
    const gate = world.inbox.options.gate;
    const refused = await gate.submit({ agent: 'inbox', lease: world.inbox.policyLease(), requestKey: owed.id, premises, effect: { order: owed.order as string, amount: 20 }, request: owed });
    expect(refused.status).toBe('REFUSED:stale_premise');
    const { inbox } = narrowedInbox(world);
    let refreshed = new Map();
    const reads = await readsDuring(world.journal, async () => {
      refreshed = await inbox.refresh();
    });
    const owedId = world.effectIdOf(owed);
    expect(refreshed).toEqual(new Map([[boundId, 'QUEUED'], [owedId, 'QUEUED']]));
    expect(new Set(reads)).toEqual(new Set([boundId, owedId]));
    expect(await readsDuring(world.journal, () => inbox.refresh())).toEqual([]);
  });

  it('refresh: a repair decided but never created is created once; a repair whose chain exists is not read', async () => {
    const world = countedWorld();
    const r = world.request(20);
    world.target.orders.get(r.order as string)!.amountCents = 100;
    world.target.onTouch = (order) => {
      if (order === r.order && world.target.refundedTotal(order) === 0) world.target.refundByHand(order, 90);
    };
    expect(await world.inbox.submit(r)).toBe('REFUSED:stale_premise');
    const id = world.effectIdOf(r);
    const repairs = latestEscalation(await world.journal.entries(id)).escalation!.repairs as unknown[];
    expect(repairs.length).toBeGreaterThan(0);
    // The decision lands and the process stops before the repair's own request is submitted.
    const escalation = latestEscalation(await world.journal.entries(id)).escalation!;
    const repair = repairs[0] as { code: string; set: Record<string, number> };
    const childId = `${r.id}:repair:${escalation.hash.slice(0, 8)}`;
    await world.journal.append('DECIDED', id, { at_ms: world.clock.nowMs, by: 'ops', decision: 'repair', escalation: escalation.hash, group: String(escalation.group), members: ['ops'], repair: { code: repair.code, set: repair.set, request_id: childId } });
    const { inbox } = narrowedInbox(world);
    const first = await inbox.refresh();
    expect([...first.keys()]).toEqual([id]);
    expect(await readsDuring(world.journal, () => inbox.refresh())).toEqual([]);
  });
});

describe('inbox work index', () => {
  it('names due escalations soonest first, keeps them due until answered or moved, and names approvals', async () => {
    const world = buildInboxWorld();
    const projection = new InboxProjection('inbox');
    const follower = new JournalFollower(world.journal);
    follower.on('entry', (entry) => projection.apply(entry));
    const a = world.request(80);
    const b = world.request(90);
    await world.inbox.submit(a);
    world.clock.nowMs = 2_000;
    await world.inbox.submit(b);
    await world.inbox.submit(world.request(20, { flagged: true }));
    await follower.catchUp();
    const [idA, idB] = [world.effectIdOf(a), world.effectIdOf(b)];
    expect(projection.work.due(1_000 + 4 * HOUR_MS - 1)).toEqual([]);
    expect(projection.work.due(2_000 + 4 * HOUR_MS)).toEqual([idA, idB]);
    expect(projection.work.due(2_000 + 4 * HOUR_MS)).toEqual([idA, idB]);
    await world.inbox.approve(idA, 'ana', { execute: false });
    world.clock.nowMs = 2_000 + 4 * HOUR_MS;
    await world.inbox.tick();
    await follower.catchUp();
    expect(projection.work.due(2_000 + 4 * HOUR_MS)).toEqual([]);
    expect(projection.work.due(2_000 + 8 * HOUR_MS)).toEqual([idB]);
    expect(projection.work.approved()).toEqual([idA]);
    expect(projection.work.sizes()).toMatchObject({ deadlines: 1, approved: 1, unfinished: 0, repaired: 0, sending: 0 });
  });
});
