import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryDerivedTables } from '../../db/memory/derived.ts';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openReadOnlyStorage } from '../../db/sqlite-storage.ts';
import { signWebhook } from '../../server/confirm/signature.ts';
import { INBOX_VIEW } from '../../server/inbox/table.ts';
import { InboxView } from '../../server/inbox/view.ts';
import { rebuildViews } from '../../server/views/rebuild.ts';
import { Views } from '../../server/views/views.ts';
import { type AppWorld, buildAppWorld, WEBHOOK_SECRET } from '../support/app-world.ts';

// The inbox kept in its derived table on the server's SQLite file: after many requests finished
// for good, memory holds the open ones alone; a restart on the same file answers the queue, the
// done and closed lists, the item pages and the figures as before, byte for byte, and the table
// is the one a rebuild from the journal alone writes.

const ROUNDS = 6;
/** Each round: one sent by the policy and confirmed, one rejected, one approved and confirmed, one left waiting. */
const OPEN = ROUNDS;

const dir = mkdtempSync(join(tmpdir(), 'interlock-inbox-table-'));
let world: AppWorld;
let restarted: AppWorld | null = null;
const ids: Record<'sent' | 'rejected' | 'approved' | 'queued', string[]> = { sent: [], rejected: [], approved: [], queued: [] };

/** Stripe says the refunds on this payment succeeded (refund.updated, signed). */
async function confirmRefunds(w: AppWorld, paymentIntent: string): Promise<void> {
  for (const { id } of w.sandbox.refunds(paymentIntent)) {
    const { lastResponse: _response, ...object } = await w.sandbox.stripe().refunds.retrieve(id);
    const event = { id: `evt_${id}`, object: 'event', type: 'refund.updated', livemode: false, created: Math.floor(w.clock.wallMs() / 1000), data: { object } };
    const body = JSON.stringify(event);
    const signature = signWebhook(body, WEBHOOK_SECRET, Math.floor(w.clock.wallMs() / 1000));
    const delivered = await w.app.inject({ method: 'POST', url: '/webhooks/stripe', headers: { 'content-type': 'application/json', 'stripe-signature': signature }, payload: body });
    expect(delivered.json()).toMatchObject({ result: 'CONFIRMED' });
  }
}

beforeAll(async () => {
  world = await buildAppWorld({ dir });
  const ask = async (requestId: string, amount: number, flags: string[] = []) => {
    const paymentIntent = await world.payment(10_000);
    const answer = (await world.agent('POST', '/v1/refunds', { request_id: requestId, payment_intent: paymentIntent, amount, flags })).json() as { status: string; effect_id: string };
    return { ...answer, paymentIntent };
  };
  const seen = async (effectId: string) => (await world.services.journal.entries(effectId)).findLast((entry) => entry.kind === 'ESCALATED')!.hash;
  for (let round = 0; round < ROUNDS; round++) {
    const sent = await ask(`table-sent-${round}`, 1_000);
    expect(sent.status).toBe('COMMITTED');
    await confirmRefunds(world, sent.paymentIntent);
    const rejected = await ask(`table-rejected-${round}`, 1_100, ['fraud_review']);
    expect(await world.services.inbox.reject(rejected.effect_id, 'rita', { seen: await seen(rejected.effect_id) })).toBe('REJECTED');
    const approved = await ask(`table-approved-${round}`, 1_200, ['fraud_review']);
    expect(await world.services.inbox.approve(approved.effect_id, 'rita', { seen: await seen(approved.effect_id) })).toBe('COMMITTED');
    await confirmRefunds(world, approved.paymentIntent);
    const queued = await ask(`table-queued-${round}`, 1_300, ['fraud_review']);
    expect(queued.status).toBe('QUEUED');
    ids.sent.push(sent.effect_id);
    ids.rejected.push(rejected.effect_id);
    ids.approved.push(approved.effect_id);
    ids.queued.push(queued.effect_id);
  }
});
afterAll(async () => {
  await restarted?.close();
  await world.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Every answer the inbox's readers give, the time they were answered at aside. */
async function answers(w: AppWorld): Promise<Record<string, unknown>> {
  const fin = await w.login('fin');
  const read = async (path: string) => {
    const answer = await w.as(fin, 'GET', path);
    expect(answer.statusCode, path).toBe(200);
    return answer.json() as Record<string, unknown>;
  };
  const out: Record<string, unknown> = {};
  // An open item's payment as last read from Stripe (display only, read apart from the views) moves on.
  const unread = (text: string) => JSON.parse(text, (key, value: unknown) => (key === 'current' ? undefined : value)) as Record<string, unknown>;
  for (const path of ['/api/inbox', '/api/done', '/api/closed', `/api/done?q=${'table-approved-3'}`, '/api/closed?q=table-rejected-1']) {
    const { now_ms: _now, ...body } = unread(JSON.stringify(await read(path)));
    out[path] = body;
  }
  for (const id of [ids.sent[0]!, ids.rejected[2]!, ids.approved[4]!, ids.queued[5]!]) {
    // What the journal and the views say of the item; the facts and panel read from Stripe now move on.
    const { facts_now: _f, facts_now_error: _e, payment: _p, payment_error: _pe, verification: _v, ...item } = unread(JSON.stringify(await read(`/api/items/${id}`)));
    out[id] = item;
  }
  const metrics = (await w.app.inject({ method: 'GET', url: '/metrics', remoteAddress: '127.0.0.1' })).body;
  out.figures = metrics.split('\n').filter((line) => /^interlock_(queue_items|breached_items|sends_in_flight|requests_waiting_turn|ambiguous_items)/.test(line));
  return out;
}

describe('the inbox on its derived table', () => {
  it('holds only open work in memory, however many requests finished for good', async () => {
    const { inbox } = await world.services.views.current();
    // A second catch-up lets go of what the first one closed.
    world.services.views.refresh();
    const again = (await world.services.views.current()).inbox;
    expect(again).toBe(inbox);
    expect(inbox.heldChains).toBe(OPEN);
    expect([...inbox.chains.keys()].sort()).toEqual([...ids.queued].sort());
    // The rest are in the table, closed.
    const storage = await openReadOnlyStorage(join(world.dir, 'interlock.sqlite'));
    try {
      const closed = await storage.derived.list(INBOX_VIEW, { direction: 'asc', limit: 1_000, open: false });
      expect(closed.map((row) => row.key).sort()).toEqual([...ids.sent, ...ids.rejected, ...ids.approved].sort());
    } finally {
      await storage.close();
    }
  });

  it('answers the same after a restart on the same file, as a rebuild from the journal does', async () => {
    const before = await answers(world);
    expect((before['/api/done'] as { items: unknown[] }).items).toHaveLength(ROUNDS);
    expect((before['/api/closed'] as { items: unknown[] }).items).toHaveLength(ROUNDS);
    expect((before['/api/inbox'] as { items: unknown[] }).items).toHaveLength(OPEN);
    await world.close();
    restarted = await buildAppWorld({ dir, clock: world.clock, sandbox: world.sandbox });
    const { inbox } = await restarted.services.views.current();
    expect(inbox.heldChains).toBe(OPEN);
    expect(await answers(restarted)).toEqual(before);

    // The journal alone, folded into tables of its own, gives the same rows and the same lists.
    const storage = await openReadOnlyStorage(join(world.dir, 'interlock.sqlite'));
    try {
      const rebuilt = new MemoryDerivedTables();
      const { digests } = await rebuildViews({ journal: storage.journal({ wallClockMs: () => Date.now() }), tables: rebuilt, inboxName: 'inbox' });
      expect(digests.find((d) => d.view === INBOX_VIEW)).toEqual((await storage.derived.digests()).find((d) => d.view === INBOX_VIEW));
      const apart = new Views({ journal: storage.journal({ wallClockMs: () => Date.now() }), inboxName: 'inbox', nowMs: () => 0, log: { fatal: () => {}, error: () => {} }, derived: rebuilt });
      const all = new Set(Object.keys(restarted.services.config.groups));
      const fromRebuilt = (await apart.current()).inbox;
      for (const kind of ['done', 'closed'] as const) expect(await fromRebuilt.history(kind, all)).toEqual(await inbox.history(kind, all));
    } finally {
      await storage.close();
    }
  });

  it('loads its open work from the table alone, before any entry is applied', async () => {
    const storage = await openReadOnlyStorage(join(dir, 'interlock.sqlite'));
    try {
      const at = (await storage.derived.cursor())!.seq;
      const loaded = new InboxView({ inboxName: 'inbox', tables: storage.derived, chain: async () => [], tablesSeq: () => at, viewsSeq: () => at });
      await loaded.load(at);
      const { inbox } = await restarted!.services.views.current();
      const all = new Set(Object.keys(restarted!.services.config.groups));
      expect(loaded.heldChains).toBe(OPEN);
      expect(loaded.queue(all)).toEqual(inbox.queue(all));
      const work = (view: InboxView) => [view.work.due(Number.MAX_SAFE_INTEGER), view.work.approved(), view.work.unfinished(), view.work.sending(), view.work.repaired()].map((ids) => [...ids].sort());
      expect(work(loaded)).toEqual(work(inbox));
    } finally {
      await storage.close();
    }
  });
});
