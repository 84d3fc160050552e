import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { CurrentFacts, InboxItem, LiveMessage } from '../../shared/api.ts';
import { READ_FAILED } from '../../server/facts/current-facts.ts';
import { Views } from '../../server/views/views.ts';
import { type AppWorld, buildAppWorld, WEBHOOK_SECRET } from '../support/app-world.ts';
import { listening, openLiveFeed } from '../support/live-socket.ts';

// The current facts of open items, over the whole server in process (no background timers):
// read when an item arrives and when a webhook names its payment, shown on GET /api/inbox, the
// item page and the live feed, and never part of the views the journal rebuilds.

let world: AppWorld;
beforeAll(async () => {
  world = await buildAppWorld();
});
afterAll(async () => world.close());

async function queued(requestId: string, amountCents = 8_000, paymentCents = 10_000) {
  const pi = await world.payment(paymentCents);
  const posted = await world.agent('POST', '/v1/refunds', { request_id: requestId, payment_intent: pi, amount: amountCents });
  expect(posted.json().status).toBe('QUEUED');
  return { pi, effectId: posted.json().effect_id as string };
}

/** Whatever the cache is reading or waiting to read is done (the views' catch-up is what tells it of arrivals). */
async function factsSettled(): Promise<void> {
  await world.services.views.current();
  await world.services.currentFacts.idle();
}

async function inboxItem(who: { cookie: string; csrf: string }, effectId: string): Promise<InboxItem | undefined> {
  return (await world.as(who, 'GET', '/api/inbox')).json().items.find((item: InboxItem) => item.effect_id === effectId);
}

const isFactsOf = (effectId: string, test: (current: CurrentFacts) => boolean = () => true) => (message: LiveMessage) =>
  message.type === 'facts' && message.effect_id === effectId && test(message.current);

describe('current facts of open items', () => {
  it('an item arriving in the inbox is read once; GET /api/inbox, the item page and the live snapshot carry its facts as of that read', async () => {
    const capture = vi.spyOn(world.services.target, 'captureForDisplay');
    const beforeMs = Date.now();
    const { pi, effectId } = await queued('facts-arrive');
    await factsSettled();
    const afterMs = Date.now();
    // The cache reads as the gate would for this item: its own refund aside (the inbox's own reads name no item).
    expect(capture.mock.calls.filter(([, exceptEffectId]) => exceptEffectId === effectId)).toHaveLength(1);
    capture.mockRestore();
    const ana = await world.login('ana');
    const current = (await inboxItem(ana, effectId))?.current;
    expect(current).toEqual({
      payment_intent: pi,
      currency: 'usd',
      amount_received: 10_000,
      refunded_by_others: 0,
      refunded_outside: 0,
      remaining: 10_000,
      disputed: false,
      as_of_ms: expect.any(Number),
      error: null,
      // The sandbox's demo payment is for its named test customer.
      customer: { name: 'Jenny Rosen', email: 'jenny.rosen@example.com' },
    });
    expect(current!.as_of_ms).toBeGreaterThanOrEqual(beforeMs);
    expect(current!.as_of_ms).toBeLessThanOrEqual(afterMs);
    expect((await world.as(ana, 'GET', `/api/items/${effectId}`)).json().item.current).toEqual(current);
    const feed = await openLiveFeed(await listening(world), ana);
    const snapshot = feed.messages[0];
    expect(snapshot?.type === 'snapshot' && snapshot.items.find((item) => item.effect_id === effectId)?.current).toEqual(current);
    feed.close();
  });

  it("a hand refund and its webhook: the item is read again, and the facts reach the live pages of its group only", async () => {
    const baseUrl = await listening(world);
    world.sandbox.configureWebhook({ url: `${baseUrl}/webhooks/stripe`, secret: WEBHOOK_SECRET });
    const ana = await world.login('ana');
    const cy = await world.login('cy');
    const anaFeed = await openLiveFeed(baseUrl, ana);
    const cyFeed = await openLiveFeed(baseUrl, cy);
    const { pi, effectId } = await queued('facts-hand');
    await factsSettled();
    await anaFeed.waitFor(isFactsOf(effectId, (current) => current.remaining === 10_000));
    // The item itself arrived first, decorated too: not read yet then.
    const arrived = await anaFeed.waitFor((message) => message.type === 'item' && message.effect_id === effectId);
    expect(arrived.type === 'item' && arrived.item?.current).toBeNull();

    // Refunded by hand in the dashboard: Stripe posts refund.created (and refund.updated), signed.
    world.sandbox.handRefund(pi, 3_000);
    await world.sandbox.webhooksIdle();
    await world.services.currentFacts.idle();
    const hand = world.sandbox.deliveries().filter((delivery) => delivery.type === 'refund.created');
    expect(hand.at(-1)).toMatchObject({ status: 200 });
    const expected = { refunded_by_others: 3_000, refunded_outside: 3_000, remaining: 7_000, error: null };
    const pushed = await anaFeed.waitFor(isFactsOf(effectId, (current) => current.remaining === 7_000));
    expect(pushed).toMatchObject({ type: 'facts', effect_id: effectId, current: expected });
    expect((await inboxItem(ana, effectId))?.current).toMatchObject(expected);
    // cy (controller) never sees ap-leads' items, so not their facts either.
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(cyFeed.messages.filter((message) => message.type === 'facts')).toEqual([]);
    world.sandbox.configureWebhook(null);
    anaFeed.close();
    cyFeed.close();
  });

  it("who paid comes from the charge's billing details in the same read (name, email, or no one), and is never journaled", async () => {
    const customers = [
      { name: 'Mara Quist', email: 'mara@example.com' },
      { name: null, email: 'only-email@example.com' },
      null,
    ];
    const { target } = world.services;
    const reads = vi.spyOn(target, 'readPayment');
    const displayReads = vi.spyOn(target, 'captureForDisplay');
    const intents = vi.spyOn(target.stripe.paymentIntents, 'retrieve');
    const charges = vi.spyOn(target.stripe.charges, 'retrieve');
    const queuedFor: string[] = [];
    for (const [i, customer] of customers.entries()) {
      const pi = (await world.sandbox.createPaymentIntent(10_000, undefined, { customer })).id;
      const posted = await world.agent('POST', '/v1/refunds', { request_id: `facts-customer-${i}`, payment_intent: pi, amount: 8_000 });
      expect(posted.json().status).toBe('QUEUED');
      queuedFor.push(posted.json().effect_id as string);
    }
    await factsSettled();
    // One display read per item, and each read of a payment is the one Stripe call its figures need: none for the customer.
    for (const effectId of queuedFor) expect(displayReads.mock.calls.filter(([, except]) => except === effectId)).toHaveLength(1);
    expect(reads.mock.calls.length).toBeGreaterThanOrEqual(queuedFor.length);
    expect(intents).toHaveBeenCalledTimes(reads.mock.calls.length);
    expect(charges).not.toHaveBeenCalled();
    for (const spy of [reads, displayReads, intents, charges]) spy.mockRestore();
    const ana = await world.login('ana');
    const shown = await Promise.all(queuedFor.map(async (effectId) => (await inboxItem(ana, effectId))?.current?.customer));
    expect(shown).toEqual(customers);
    // The journal, which decisions read, never holds it.
    const journaled = JSON.stringify(await world.services.journal.scan(0, 1_000_000));
    expect(journaled).not.toContain('Mara Quist');
    expect(journaled).not.toContain('only-email@example.com');
  });

  it('a read that fails keeps the last good figures and their time, marked with error, until a read succeeds', async () => {
    const { effectId } = await queued('facts-fail');
    await factsSettled();
    const good = world.services.currentFacts.get(effectId);
    expect(good).toMatchObject({ error: null });
    const capture = vi.spyOn(world.services.target, 'captureForDisplay').mockRejectedValueOnce(new Error('Stripe is down'));
    expect(await world.services.currentFacts.refresh(effectId)).toEqual({ ...good, error: READ_FAILED });
    capture.mockRestore();
    const ana = await world.login('ana');
    expect((await inboxItem(ana, effectId))?.current).toEqual({ ...good, error: READ_FAILED });
    expect(await world.services.currentFacts.refresh(effectId)).toMatchObject({ remaining: good!.remaining, error: null });
  });

  it('the views rebuilt from the journal equal the live ones: the current facts are in neither, only on the way out', async () => {
    await queued('facts-rebuild');
    await factsSettled();
    const live = await world.services.views.current();
    const rebuilt = await new Views({
      journal: world.services.journal,
      inboxName: world.services.config.inboxName,
      nowMs: () => world.clock.nowMs(),
      log: { fatal: vi.fn(), error: vi.fn() },
    }).current();
    const everyGroup = new Set(Object.keys(world.services.config.groups));
    expect(rebuilt.seq).toBe(live.seq);
    expect(rebuilt.inbox.chains).toEqual(live.inbox.chains);
    expect(rebuilt.inbox.queue(everyGroup)).toEqual(live.inbox.queue(everyGroup));
    expect(live.inbox.queue(everyGroup).filter((item) => 'current' in item)).toEqual([]);
    // What the API shows is exactly the views' queue, each item decorated with its facts.
    const ana = await world.login('ana');
    const shown: InboxItem[] = (await world.as(ana, 'GET', '/api/inbox')).json().items;
    expect(shown.every((item) => item.current !== null && item.current !== undefined)).toBe(true);
    expect(shown.map(({ current: _current, ...item }) => item)).toEqual(rebuilt.inbox.queue(new Set(['ap-leads'])));
  });

  it('an item that leaves the inbox (approved and sent) is forgotten', async () => {
    const { effectId } = await queued('facts-leave');
    await factsSettled();
    expect(world.services.currentFacts.get(effectId)).not.toBeNull();
    const ana = await world.login('ana');
    const item = await inboxItem(ana, effectId);
    const decided = await world.as(ana, 'POST', `/api/items/${effectId}/decisions`, { action: 'approve', escalation: item!.escalation });
    expect(decided.json().status).toBe('COMMITTED');
    await factsSettled();
    expect(world.services.currentFacts.get(effectId)).toBeNull();
  });
});
