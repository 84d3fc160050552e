import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { CurrentFacts, InboxItem, LiveMessage } from '../../shared/api.ts';
import { CAPTURE_SPACING_MS } from '../../server/facts/limits.ts';
import type { Delivery } from '../../server/sandbox/index.ts';
import { type AppWorld, buildAppWorld, WEBHOOK_SECRET } from '../support/app-world.ts';
import { listening, openLiveFeed } from '../support/live-socket.ts';

// Disputes are display facts: the sandbox posts Stripe's charge.dispute.* events, signed as its
// refund events are, to the whole server listening on a real port; a verified one makes the open
// items of its payment read Stripe again, so the Disputed chip reaches the live pages within a
// second. Nothing of it is journaled: the send path reads Stripe again anyway.

let world: AppWorld;
let baseUrl: string;
beforeAll(async () => {
  world = await buildAppWorld();
  baseUrl = await listening(world);
  world.sandbox.configureWebhook({ url: `${baseUrl}/webhooks/stripe`, secret: WEBHOOK_SECRET });
});
afterAll(async () => world.close());

async function queued(requestId: string) {
  const pi = await world.payment(10_000);
  const posted = await world.agent('POST', '/v1/refunds', { request_id: requestId, payment_intent: pi, amount: 8_000 });
  expect(posted.json().status).toBe('QUEUED');
  return { pi, effectId: posted.json().effect_id as string };
}

/** The cache has read everything it was told of, and its pace lets the next read start at once. */
async function factsQuiet(): Promise<void> {
  await world.services.views.current();
  await world.services.currentFacts.idle();
  await new Promise((resolve) => setTimeout(resolve, CAPTURE_SPACING_MS));
}

/** The deliveries of dispute events since `from` deliveries. */
async function disputeDeliveries(from: number): Promise<Delivery[]> {
  await world.sandbox.webhooksIdle();
  return world.sandbox.deliveries().slice(from).filter((delivery) => delivery.type.startsWith('charge.dispute.'));
}

const isFactsOf = (effectId: string, test: (current: CurrentFacts) => boolean) => (message: LiveMessage) =>
  message.type === 'facts' && message.effect_id === effectId && test(message.current);

describe('dispute webhooks from the sandbox', () => {
  it('a dispute opened on a queued item’s payment: a live facts message with disputed true within a second, the inbox says so, the webhooks journal nothing', async () => {
    const { pi, effectId } = await queued('dispute-live');
    const ana = await world.login('ana');
    const feed = await openLiveFeed(baseUrl, ana);
    await factsQuiet();
    expect(world.services.currentFacts.get(effectId)).toMatchObject({ disputed: false });
    const entriesBefore = await world.entryCount();
    const deliveriesBefore = world.sandbox.deliveries().length;
    const openedAtMs = Date.now();
    const dispute = world.sandbox.openDispute(pi);
    const pushed = await feed.waitFor(isFactsOf(effectId, (current) => current.disputed), 1_000);
    expect(Date.now() - openedAtMs).toBeLessThan(1_000);
    expect(pushed).toMatchObject({ type: 'facts', effect_id: effectId, current: { payment_intent: pi, disputed: true, error: null } });
    const delivered = await disputeDeliveries(deliveriesBefore);
    expect(delivered.map((delivery) => [delivery.type, delivery.status])).toEqual([['charge.dispute.created', 200]]);
    expect(JSON.parse(delivered[0]!.body)).toMatchObject({ data: { object: { id: dispute.id, payment_intent: pi } } });
    const inbox: InboxItem[] = (await world.as(ana, 'GET', '/api/inbox')).json().items;
    expect(inbox.find((item) => item.effect_id === effectId)?.current).toMatchObject({ disputed: true });

    // The dispute moves and closes: each event is taken and the item read again; the payment panel shows where it stands.
    await factsQuiet();
    world.sandbox.moveDispute(dispute.id, 'under_review');
    world.sandbox.moveDispute(dispute.id, 'lost');
    const moved = await disputeDeliveries(deliveriesBefore);
    expect(moved.map((delivery) => [delivery.type, delivery.status])).toEqual([
      ['charge.dispute.created', 200],
      ['charge.dispute.updated', 200],
      ['charge.dispute.closed', 200],
    ]);
    await world.services.currentFacts.idle();
    expect(world.services.currentFacts.get(effectId)).toMatchObject({ disputed: true });
    // The webhooks journal nothing: no confirmation, nothing on the chain but what the inbox itself
    // may write when its own read finds the payment moved (showing the item again).
    const written = (await world.services.journal.scan(0, 1_000_000)).slice(entriesBefore).map(({ entry }) => entry);
    expect(written.filter((entry) => entry.kind !== 'ESCALATED')).toEqual([]);
    const page = (await world.as(ana, 'GET', `/api/items/${effectId}`)).json();
    expect(page.payment?.dispute).toMatchObject({ status: 'lost' });
    feed.close();
  });

  it.each([
    ['signed with another secret', { wrongSecret: true }],
    ['unsigned', { unsigned: true }],
  ])('a dispute event %s is refused with 400 as a refund event is, and nothing is read', async (_name, mode) => {
    const { pi, effectId } = await queued(`dispute-forged-${Object.keys(mode)[0]}`);
    await factsQuiet();
    const deliveriesBefore = world.sandbox.deliveries().length;
    const capture = vi.spyOn(world.services.target, 'capture');
    world.sandbox.webhookMode(mode);
    try {
      world.sandbox.openDispute(pi);
      const delivered = await disputeDeliveries(deliveriesBefore);
      expect(delivered.length).toBeGreaterThan(1);
      expect(delivered.every((delivery) => delivery.type === 'charge.dispute.created' && delivery.status === 400)).toBe(true);
      await world.services.currentFacts.idle();
      expect(capture).not.toHaveBeenCalled();
      expect(world.services.currentFacts.get(effectId)).toMatchObject({ disputed: false });
    } finally {
      world.sandbox.webhookMode({});
      capture.mockRestore();
    }
  });

  it('a dispute on a payment no item has is acknowledged, and nothing is read or journaled', async () => {
    await queued('dispute-elsewhere');
    await factsQuiet();
    const pi = await world.payment(5_000);
    const entriesBefore = await world.entryCount();
    const deliveriesBefore = world.sandbox.deliveries().length;
    const capture = vi.spyOn(world.services.target, 'capture');
    try {
      world.sandbox.openDispute(pi);
      const delivered = await disputeDeliveries(deliveriesBefore);
      expect(delivered.map((delivery) => [delivery.type, delivery.status])).toEqual([['charge.dispute.created', 200]]);
      // What it was answered: received, and recorded as nothing (a dispute confirms no refund).
      const again = await world.app.inject({
        method: 'POST',
        url: '/webhooks/stripe',
        headers: { 'content-type': 'application/json', 'stripe-signature': delivered[0]!.signature! },
        payload: delivered[0]!.body,
      });
      expect([again.statusCode, again.json()]).toEqual([200, { received: true, result: 'IGNORED:type' }]);
      await world.services.currentFacts.idle();
      expect(capture).not.toHaveBeenCalled();
      expect(await world.entryCount()).toBe(entriesBefore);
    } finally {
      capture.mockRestore();
    }
  });
});
