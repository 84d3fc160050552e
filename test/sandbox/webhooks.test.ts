import Stripe from 'stripe';
import { describe, expect, it } from 'vitest';
import { sandboxLimits } from '../../server/sandbox/index.ts';
import { unusedPort, useSandbox, useWebhookListener } from './support.ts';

const SECRET = 'whsec_sandbox_test_secret';

function verify(raw: string, header: string | string[] | undefined): Stripe.Event {
  return Stripe.webhooks.constructEvent(raw, header as string, SECRET);
}

describe('sandbox webhooks, signed like Stripe', () => {
  it('refund.created then refund.updated reach the endpoint, and constructEvent verifies their signatures', async () => {
    const listener = await useWebhookListener();
    const sandbox = await useSandbox({ settle: 'manual', webhook: { url: listener.url, secret: SECRET } });
    const intent = await sandbox.createPaymentIntent(5000);
    const refund = await sandbox
      .stripe()
      .refunds.create({ payment_intent: intent.id, amount: 700 }, { idempotencyKey: 'wh-1' });
    await listener.waitFor(1); // two batches may be delivered in either order, as Stripe's may
    sandbox.settle(refund.id);
    const received = await listener.waitFor(2);
    const events = received.map((hook) => verify(hook.rawBody, hook.headers['stripe-signature']));
    expect(events.map((event) => event.type)).toEqual(['refund.created', 'refund.updated']);
    expect(events[0]).toMatchObject({
      object: 'event',
      livemode: false,
      api_version: Stripe.API_VERSION,
      data: { object: { id: refund.id, object: 'refund', status: 'pending', amount: 700 } },
      request: { id: refund.lastResponse.requestId, idempotency_key: 'wh-1' },
    });
    expect(events[0]!.id).toMatch(/^evt_/);
    expect(events[1]).toMatchObject({
      data: { object: { id: refund.id, status: 'succeeded' }, previous_attributes: { status: 'pending' } },
      request: { id: null, idempotency_key: null },
    });
    expect(received[0]!.headers['content-type']).toMatch(/^application\/json/);
    expect(received[0]!.headers['stripe-signature']).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
  });

  it('a failed refund sends refund.failed and refund.updated; a hand refund sends refund.created', async () => {
    const listener = await useWebhookListener();
    const sandbox = await useSandbox({ settle: 'manual', webhook: { url: listener.url, secret: SECRET } });
    const intent = await sandbox.createPaymentIntent(5000);
    const byHand = sandbox.handRefund(intent.id, 300);
    sandbox.settle(byHand.id, 'failed', 'expired_or_canceled_card');
    const events = (await listener.waitFor(3)).map((hook) => verify(hook.rawBody, hook.headers['stripe-signature']));
    expect(events.map((event) => event.type)).toEqual(['refund.created', 'refund.failed', 'refund.updated']);
    expect(events[1]!.data.object).toMatchObject({
      id: byHand.id,
      status: 'failed',
      failure_reason: 'expired_or_canceled_card',
    });
  });

  it('the API answer never waits for a webhook endpoint that does not answer', async () => {
    const listener = await useWebhookListener(() => 'hang');
    const sandbox = await useSandbox({ webhook: { url: listener.url, secret: SECRET } });
    const intent = await sandbox.createPaymentIntent(5000);
    const first = await sandbox.stripe().refunds.create({ payment_intent: intent.id, amount: 100 });
    await listener.waitFor(1);
    const startedMs = Date.now();
    const second = await sandbox.stripe().refunds.create({ payment_intent: intent.id, amount: 100 });
    expect(Date.now() - startedMs).toBeLessThan(1_000);
    expect(second.id).not.toBe(first.id);
  });

  it('duplicate mode: every event arrives twice with the same id', async () => {
    const listener = await useWebhookListener();
    const sandbox = await useSandbox({ settle: 'manual', webhook: { url: listener.url, secret: SECRET } });
    sandbox.webhookMode({ duplicate: true });
    const intent = await sandbox.createPaymentIntent(5000);
    await sandbox.stripe().refunds.create({ payment_intent: intent.id, amount: 100 });
    const events = (await listener.waitFor(2)).map((hook) => verify(hook.rawBody, hook.headers['stripe-signature']));
    await sandbox.webhooksIdle();
    expect(events).toHaveLength(2);
    expect(events[0]!.id).toBe(events[1]!.id);
  });

  it('reverse mode: events raised together arrive in reverse order', async () => {
    const listener = await useWebhookListener();
    const sandbox = await useSandbox({ settle: 'manual', webhook: { url: listener.url, secret: SECRET } });
    const intent = await sandbox.createPaymentIntent(5000);
    const refund = await sandbox.stripe().refunds.create({ payment_intent: intent.id, amount: 100 });
    await listener.waitFor(1);
    sandbox.webhookMode({ reverse: true });
    sandbox.settle(refund.id, 'failed');
    const events = (await listener.waitFor(3)).map((hook) => verify(hook.rawBody, hook.headers['stripe-signature']));
    expect(events.map((event) => event.type)).toEqual(['refund.created', 'refund.updated', 'refund.failed']);
  });

  it('unsigned mode: no Stripe-Signature header, so constructEvent refuses the delivery', async () => {
    const listener = await useWebhookListener();
    const sandbox = await useSandbox({ webhook: { url: listener.url, secret: SECRET } });
    sandbox.webhookMode({ unsigned: true });
    sandbox.handRefund((await sandbox.createPaymentIntent(5000)).id, 100);
    const [hook] = await listener.waitFor(1);
    expect(hook!.headers['stripe-signature']).toBeUndefined();
    expect(() => verify(hook!.rawBody, hook!.headers['stripe-signature'])).toThrow(
      Stripe.errors.StripeSignatureVerificationError,
    );
  });

  it('wrongSecret mode: signed with another secret, so constructEvent refuses the delivery', async () => {
    const listener = await useWebhookListener();
    const sandbox = await useSandbox({ webhook: { url: listener.url, secret: SECRET } });
    sandbox.webhookMode({ wrongSecret: true });
    sandbox.handRefund((await sandbox.createPaymentIntent(5000)).id, 100);
    const [hook] = await listener.waitFor(1);
    expect(hook!.headers['stripe-signature']).toMatch(/^t=\d+,v1=/);
    expect(() => verify(hook!.rawBody, hook!.headers['stripe-signature'])).toThrow(/No signatures found matching/);
  });

  it('delayMs mode: a batch waits before it is sent', async () => {
    const listener = await useWebhookListener();
    const sandbox = await useSandbox({ settle: 'manual', webhook: { url: listener.url, secret: SECRET } });
    sandbox.webhookMode({ delayMs: 300 });
    const startedMs = Date.now();
    sandbox.handRefund((await sandbox.createPaymentIntent(5000)).id, 100);
    await listener.waitFor(1);
    expect(Date.now() - startedMs).toBeGreaterThanOrEqual(290);
  });

  it('retry: a non-2xx answer is retried with the same body until it is taken; deliveries() shows each attempt', async () => {
    const listener = await useWebhookListener((n) => (n === 1 ? 500 : 200));
    const sandbox = await useSandbox({ settle: 'manual', webhook: { url: listener.url, secret: SECRET } });
    sandbox.handRefund((await sandbox.createPaymentIntent(5000)).id, 100);
    await listener.waitFor(2);
    await sandbox.webhooksIdle();
    const deliveries = sandbox.deliveries();
    expect(deliveries.map((delivery) => [delivery.type, delivery.attempt, delivery.status])).toEqual([
      ['refund.created', 1, 500],
      ['refund.created', 2, 200],
    ]);
    expect(deliveries[1]!.body).toBe(deliveries[0]!.body);
    expect(listener.received[1]!.rawBody).toBe(listener.received[0]!.rawBody);
  });

  it('retry is bounded: an endpoint that always fails gets a fixed number of attempts', async () => {
    const listener = await useWebhookListener(() => 503);
    const sandbox = await useSandbox({ settle: 'manual', webhook: { url: listener.url, secret: SECRET } });
    sandbox.handRefund((await sandbox.createPaymentIntent(5000)).id, 100);
    await sandbox.webhooksIdle();
    expect(sandbox.deliveries().map((delivery) => delivery.attempt)).toEqual(
      Array.from({ length: sandboxLimits.webhookAttemptsMax }, (_, i) => i + 1),
    );
    expect(listener.received).toHaveLength(sandboxLimits.webhookAttemptsMax);
  });

  it('an unreachable endpoint is recorded as status 0 and retried', async () => {
    const url = `http://127.0.0.1:${await unusedPort()}/hooks`;
    const sandbox = await useSandbox({ settle: 'manual', webhook: { url, secret: SECRET } });
    sandbox.handRefund((await sandbox.createPaymentIntent(5000)).id, 100);
    await sandbox.webhooksIdle();
    const deliveries = sandbox.deliveries();
    expect(deliveries).toHaveLength(sandboxLimits.webhookAttemptsMax);
    expect(deliveries.every((delivery) => delivery.status === 0 && delivery.error !== undefined)).toBe(true);
  });

  it('configureWebhook: nothing is sent before an endpoint is set, events after it are', async () => {
    const listener = await useWebhookListener();
    const sandbox = await useSandbox({ settle: 'manual' });
    const intent = await sandbox.createPaymentIntent(5000);
    sandbox.handRefund(intent.id, 100);
    await sandbox.webhooksIdle();
    expect(sandbox.deliveries()).toHaveLength(0);
    sandbox.configureWebhook({ url: listener.url, secret: SECRET });
    sandbox.handRefund(intent.id, 200);
    const [hook] = await listener.waitFor(1);
    expect(verify(hook!.rawBody, hook!.headers['stripe-signature']).data.object).toMatchObject({ amount: 200 });
  });
});

describe('sandbox charge.refunded webhooks, to an endpoint that enables them', () => {
  it('an endpoint enabling every event gets charge.refunded beside refund.created for each refund, the charge as Stripe.Charge with what changed before', async () => {
    const listener = await useWebhookListener();
    const sandbox = await useSandbox({ settle: 'manual', webhook: { url: listener.url, secret: SECRET, events: ['*'] } });
    const intent = await sandbox.createPaymentIntent(5000);
    const partial = await sandbox.stripe().refunds.create({ payment_intent: intent.id, amount: 700 }, { idempotencyKey: 'ch-1' });
    // Stripe does not promise the order of deliveries, and neither does the sandbox across two
    // batches: the first refund's pair is waited for before the second refund is made.
    await listener.waitFor(2);
    const rest = sandbox.handRefund(intent.id, 4300);
    const received = await listener.waitFor(4);
    const events = received.map((hook) => verify(hook.rawBody, hook.headers['stripe-signature']));
    expect(events.map((event) => event.type)).toEqual(['refund.created', 'charge.refunded', 'refund.created', 'charge.refunded']);
    const [, first, , second] = events;
    if (first?.type !== 'charge.refunded' || second?.type !== 'charge.refunded') throw new Error('expected charge.refunded events');
    const firstEvent: Stripe.ChargeRefundedEvent = first;
    const charge: Stripe.Charge = firstEvent.data.object;
    expect(charge).toMatchObject({ id: intent.latest_charge, object: 'charge', amount: 5000, amount_refunded: 700, refunded: false, payment_intent: intent.id });
    expect(charge).not.toHaveProperty('refunds');
    expect(firstEvent.data.previous_attributes).toEqual({ amount_refunded: 0 });
    expect(firstEvent.request).toEqual({ id: partial.lastResponse.requestId, idempotency_key: 'ch-1' });
    expect(second.data.object).toMatchObject({ amount_refunded: 5000, refunded: true });
    expect(second.data.previous_attributes).toEqual({ amount_refunded: 700, refunded: false });
    expect(second.request).toEqual({ id: null, idempotency_key: null });
    expect(events[2]!.data.object).toMatchObject({ id: rest.id });
  });

  it('an endpoint left to the default events (refunds and disputes) gets no charge.refunded, as before; one enabling only charge.refunded gets only that', async () => {
    const everyDefault = await useWebhookListener();
    const onlyCharges = await useWebhookListener();
    const sandbox = await useSandbox({ settle: 'manual', webhook: { url: everyDefault.url, secret: SECRET } });
    const intent = await sandbox.createPaymentIntent(5000);
    sandbox.handRefund(intent.id, 100);
    await sandbox.webhooksIdle();
    expect(sandbox.deliveries().map((delivery) => delivery.type)).toEqual(['refund.created']);
    sandbox.configureWebhook({ url: onlyCharges.url, secret: SECRET, events: ['charge.refunded'] });
    sandbox.handRefund(intent.id, 100);
    sandbox.settle();
    await sandbox.webhooksIdle();
    expect(onlyCharges.received.map((hook) => verify(hook.rawBody, hook.headers['stripe-signature']).type)).toEqual(['charge.refunded']);
  });

  it('the webhook control route takes the enabled events and refuses a type the sandbox does not send', async () => {
    const listener = await useWebhookListener();
    const sandbox = await useSandbox({ settle: 'manual' });
    const post = (body: unknown) =>
      fetch(`${sandbox.url}/_sandbox/webhook`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const refused = await post({ url: listener.url, secret: SECRET, events: ['charge.refunded', 'invoice.paid'] });
    expect(refused.status).toBe(400);
    expect(await refused.json()).toMatchObject({ error: { param: 'events' } });
    expect((await post({ url: listener.url, secret: SECRET, events: ['charge.refunded'] })).status).toBe(200);
    sandbox.handRefund((await sandbox.createPaymentIntent(5000)).id, 100);
    const [hook] = await listener.waitFor(1);
    expect(verify(hook!.rawBody, hook!.headers['stripe-signature']).type).toBe('charge.refunded');
  });
});

describe('sandbox dispute webhooks, signed like its refund webhooks', () => {
  it('a dispute opened, moved to review and lost sends charge.dispute.created, .updated and .closed, each verified by constructEvent', async () => {
    const listener = await useWebhookListener();
    const sandbox = await useSandbox({ webhook: { url: listener.url, secret: SECRET } });
    const intent = await sandbox.createPaymentIntent(5000);
    const opened = sandbox.openDispute(intent.id);
    sandbox.moveDispute(opened.id, 'under_review');
    const lost = sandbox.moveDispute(opened.id, 'lost');
    const received = await listener.waitFor(3);
    const events = received.map((hook) => verify(hook.rawBody, hook.headers['stripe-signature']));
    expect(received.every((hook) => /^t=\d+,v1=[0-9a-f]{64}$/.test(String(hook.headers['stripe-signature'])))).toBe(true);
    expect(events.map((event) => event.type)).toEqual(['charge.dispute.created', 'charge.dispute.updated', 'charge.dispute.closed']);
    const dispute = { id: opened.id, object: 'dispute', charge: intent.latest_charge, payment_intent: intent.id, amount: 5000 };
    expect(events[0]).toMatchObject({
      object: 'event',
      livemode: false,
      api_version: Stripe.API_VERSION,
      data: { object: { ...dispute, status: 'needs_response', evidence_details: { has_evidence: false } } },
      request: { id: null, idempotency_key: null },
    });
    expect(events[0]!.id).toMatch(/^evt_/);
    expect(events[0]!.data).not.toHaveProperty('previous_attributes');
    expect(events[1]!.data).toMatchObject({
      object: { ...dispute, status: 'under_review', evidence_details: { has_evidence: true, submission_count: 1 } },
      previous_attributes: { status: 'needs_response', evidence_details: { has_evidence: false, submission_count: 0 } },
    });
    expect(events[2]!.data).toEqual({ object: lost, previous_attributes: { status: 'under_review' } });
    // The dispute and its charge read back as the events said: closed, and the charge still disputed.
    expect(await sandbox.stripe().disputes.retrieve(opened.id)).toMatchObject({ status: 'lost' });
    expect((await sandbox.stripe().charges.retrieve(String(intent.latest_charge))).disputed).toBe(true);
    expect(new Set(events.map((event) => event.id)).size).toBe(3);
  });

  it('a payment made with pm_card_createDispute sends charge.dispute.created once its dispute is durable, by the API and by the demo route alike', async () => {
    const listener = await useWebhookListener();
    const sandbox = await useSandbox({ webhook: { url: listener.url, secret: SECRET } });
    const demo = await sandbox.createPaymentIntent(3000, 'pm_card_createDispute');
    const viaApi = await sandbox.stripe().paymentIntents.create({ amount: 4000, currency: 'usd', payment_method: 'pm_card_createDispute', confirm: true });
    const events = (await listener.waitFor(2)).map((hook) => verify(hook.rawBody, hook.headers['stripe-signature']));
    expect(events.map((event) => [event.type, (event.data.object as Stripe.Dispute).payment_intent])).toEqual([
      ['charge.dispute.created', demo.id],
      ['charge.dispute.created', viaApi.id],
    ]);
    expect(events[0]!.data.object).toMatchObject({ reason: 'fraudulent', status: 'needs_response' });
  });

  it('a closed dispute cannot move again, nor a dispute to where it already is; nothing is sent for a refused move', async () => {
    const listener = await useWebhookListener();
    const sandbox = await useSandbox({ webhook: { url: listener.url, secret: SECRET } });
    const intent = await sandbox.createPaymentIntent(5000);
    const opened = sandbox.openDispute(intent.id);
    expect(sandbox.moveDispute(opened.id, 'won')).toMatchObject({ status: 'won', evidence_details: { has_evidence: false } });
    expect(() => sandbox.moveDispute(opened.id, 'lost')).toThrow(/already closed \(won\)/);
    expect(() => sandbox.moveDispute('dp_unknown', 'won')).toThrow(/No such dispute/);
    const other = sandbox.openDispute((await sandbox.createPaymentIntent(1000)).id);
    sandbox.moveDispute(other.id, 'under_review');
    expect(() => sandbox.moveDispute(other.id, 'under_review')).toThrow(/already under_review/);
    await sandbox.webhooksIdle();
    expect(sandbox.deliveries().map((delivery) => delivery.type)).toEqual([
      'charge.dispute.created',
      'charge.dispute.closed',
      'charge.dispute.created',
      'charge.dispute.updated',
    ]);
  });
});
