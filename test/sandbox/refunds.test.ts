import Stripe from 'stripe';
import { describe, expect, it } from 'vitest';
import { manualClock, rejectionOf, useSandbox, useWebhookListener } from './support.ts';

describe('sandbox refunds through the real SDK', () => {
  it('create: a refund starts pending with Stripe shape, our metadata and the sandbox clock as created', async () => {
    const clock = manualClock();
    const sandbox = await useSandbox({ settle: 'manual', clockMs: clock.nowMs });
    const intent = await sandbox.createPaymentIntent(5000);
    const refund = await sandbox.stripe().refunds.create({
      payment_intent: intent.id,
      amount: 1200,
      reason: 'requested_by_customer',
      metadata: { effect_id: 'eff_1' },
    });
    expect(refund).toMatchObject({
      object: 'refund',
      amount: 1200,
      currency: 'usd',
      charge: intent.latest_charge,
      payment_intent: intent.id,
      status: 'pending',
      reason: 'requested_by_customer',
      metadata: { effect_id: 'eff_1' },
      created: Math.floor(clock.nowMs() / 1000),
    });
    expect(refund.id).toMatch(/^re_[0-9A-Za-z]{24}$/);
    expect(refund.failure_reason).toBeUndefined();
  });

  it('create: without an amount it refunds what is left; by charge id works too', async () => {
    const sandbox = await useSandbox({ settle: 'manual' });
    const stripe = sandbox.stripe();
    const intent = await sandbox.createPaymentIntent(5000);
    await stripe.refunds.create({ charge: intent.latest_charge as string, amount: 1000 });
    const rest = await stripe.refunds.create({ payment_intent: intent.id });
    expect(rest.amount).toBe(4000);
    const charge = await stripe.charges.retrieve(intent.latest_charge as string);
    expect(charge).toMatchObject({ amount_refunded: 5000, refunded: true });
  });

  it('list: refunds of a payment intent come newest first as a Stripe list, paged by limit and cursor', async () => {
    const sandbox = await useSandbox({ settle: 'manual' });
    const stripe = sandbox.stripe();
    const intent = await sandbox.createPaymentIntent(5000);
    const other = await sandbox.createPaymentIntent(700);
    const ids: string[] = [];
    for (const amount of [100, 200, 300])
      ids.push((await stripe.refunds.create({ payment_intent: intent.id, amount })).id);
    await stripe.refunds.create({ payment_intent: other.id, amount: 50 });
    const all = await stripe.refunds.list({ payment_intent: intent.id });
    expect(all).toMatchObject({ object: 'list', has_more: false, url: '/v1/refunds' });
    expect(all.data.map((refund) => refund.id)).toEqual([...ids].reverse());
    const first = await stripe.refunds.list({ payment_intent: intent.id, limit: 2 });
    expect(first.data.map((refund) => refund.id)).toEqual([ids[2], ids[1]]);
    expect(first.has_more).toBe(true);
    const next = await stripe.refunds.list({ payment_intent: intent.id, limit: 2, starting_after: ids[1] });
    expect(next.data.map((refund) => refund.id)).toEqual([ids[0]]);
    expect(next.has_more).toBe(false);
    expect((await stripe.refunds.list({ limit: 100 })).data).toHaveLength(4);
    const badLimit = await rejectionOf(stripe.refunds.list({ limit: 101 }));
    expect(badLimit).toMatchObject({ statusCode: 400, param: 'limit' });
  });

  it('retrieve: a refund reads back by id; an unknown id is 404 resource_missing', async () => {
    const sandbox = await useSandbox({ settle: 'manual' });
    const stripe = sandbox.stripe();
    const intent = await sandbox.createPaymentIntent(5000);
    const refund = await stripe.refunds.create({ payment_intent: intent.id, amount: 10 });
    expect(await stripe.refunds.retrieve(refund.id)).toEqual(JSON.parse(JSON.stringify(refund)));
    expect(await rejectionOf(stripe.refunds.retrieve('re_missing'))).toMatchObject({
      statusCode: 404,
      code: 'resource_missing',
    });
  });

  it('validation: an unknown payment intent is 400 resource_missing naming the parameter', async () => {
    const sandbox = await useSandbox();
    const error = await rejectionOf(
      sandbox.stripe().refunds.create({ payment_intent: 'pi_does_not_exist', amount: 100 }),
    );
    expect(error).toBeInstanceOf(Stripe.errors.StripeInvalidRequestError);
    expect(error).toMatchObject({ statusCode: 400, code: 'resource_missing', param: 'payment_intent' });
  });

  it.each([
    ['zero', '0'],
    ['negative', '-5'],
    ['fractional', '1.5'],
    ['not a number', 'ten'],
  ])('validation: an amount that is %s is refused with 400 parameter_invalid_integer', async (_name, amount) => {
    const sandbox = await useSandbox();
    const intent = await sandbox.createPaymentIntent(5000);
    const error = await rejectionOf(
      sandbox.stripe().refunds.create({ payment_intent: intent.id, amount: amount as unknown as number }),
    );
    expect(error).toMatchObject({ statusCode: 400, code: 'parameter_invalid_integer', param: 'amount' });
    expect(sandbox.refunds()).toHaveLength(0);
  });

  it('validation: more than is left to refund is 400 amount_too_large; nothing left is charge_already_refunded', async () => {
    const sandbox = await useSandbox({ settle: 'manual' });
    const stripe = sandbox.stripe();
    const intent = await sandbox.createPaymentIntent(5000);
    await stripe.refunds.create({ payment_intent: intent.id, amount: 4000 });
    const tooLarge = await rejectionOf(stripe.refunds.create({ payment_intent: intent.id, amount: 1001 }));
    expect(tooLarge).toMatchObject({ statusCode: 400, code: 'amount_too_large', param: 'amount' });
    await stripe.refunds.create({ payment_intent: intent.id, amount: 1000 });
    const none = await rejectionOf(stripe.refunds.create({ payment_intent: intent.id, amount: 1 }));
    expect(none).toMatchObject({ statusCode: 400, code: 'charge_already_refunded' });
    expect(sandbox.refunds(intent.id).map((refund) => refund.amount)).toEqual([4000, 1000]);
  });

  it('validation: a disputed charge is refused with 400 charge_disputed', async () => {
    const sandbox = await useSandbox();
    const intent = await sandbox.createPaymentIntent(5000);
    sandbox.openDispute(intent.id);
    const error = await rejectionOf(sandbox.stripe().refunds.create({ payment_intent: intent.id, amount: 100 }));
    expect(error).toMatchObject({ statusCode: 400, code: 'charge_disputed' });
    expect(sandbox.refunds()).toHaveLength(0);
  });

  it('validation: both payment_intent and charge, or neither, is refused', async () => {
    const sandbox = await useSandbox();
    const intent = await sandbox.createPaymentIntent(5000);
    const both = await rejectionOf(
      sandbox.stripe().refunds.create({ payment_intent: intent.id, charge: intent.latest_charge as string }),
    );
    expect(both).toMatchObject({ statusCode: 400, code: 'parameters_exclusive' });
    expect(await rejectionOf(sandbox.stripe().refunds.create({}))).toMatchObject({
      statusCode: 400,
      code: 'parameter_missing',
    });
  });

  it('hand refunds: a dashboard refund shows in the list without metadata and counts against what is left', async () => {
    const sandbox = await useSandbox({ settle: 'manual' });
    const stripe = sandbox.stripe();
    const intent = await sandbox.createPaymentIntent(5000);
    const ours = await stripe.refunds.create({
      payment_intent: intent.id,
      amount: 1000,
      metadata: { effect_id: 'e1' },
    });
    const byHand = sandbox.handRefund(intent.id, 3000);
    expect(byHand).toMatchObject({
      object: 'refund',
      amount: 3000,
      status: 'pending',
      metadata: {},
      payment_intent: intent.id,
    });
    const listed = await stripe.refunds.list({ payment_intent: intent.id });
    expect(listed.data.map((refund) => [refund.id, refund.metadata])).toEqual([
      [byHand.id, {}],
      [ours.id, { effect_id: 'e1' }],
    ]);
    const tooLarge = await rejectionOf(stripe.refunds.create({ payment_intent: intent.id, amount: 1001 }));
    expect(tooLarge).toMatchObject({ code: 'amount_too_large' });
    expect(() => sandbox.handRefund(intent.id, 1001)).toThrow(/greater than unrefunded amount/);
  });

  it('settle manual: pending until settled; a failed refund gets a failure_reason and frees its amount', async () => {
    const sandbox = await useSandbox({ settle: 'manual' });
    const stripe = sandbox.stripe();
    const intent = await sandbox.createPaymentIntent(5000);
    const kept = await stripe.refunds.create({ payment_intent: intent.id, amount: 1000 });
    const lost = await stripe.refunds.create({ payment_intent: intent.id, amount: 4000 });
    expect((await stripe.refunds.retrieve(kept.id)).status).toBe('pending');
    sandbox.settle(kept.id);
    sandbox.settle(lost.id, 'failed', 'charge_for_pending_refund_disputed');
    expect(await stripe.refunds.retrieve(kept.id)).toMatchObject({ status: 'succeeded' });
    expect(await stripe.refunds.retrieve(lost.id)).toMatchObject({
      status: 'failed',
      failure_reason: 'charge_for_pending_refund_disputed',
    });
    const charge = await stripe.charges.retrieve(intent.latest_charge as string);
    expect(charge).toMatchObject({ amount_refunded: 1000, refunded: false });
    expect(() => sandbox.settle(lost.id)).toThrow(/only a pending refund settles/);
    const again = await stripe.refunds.create({ payment_intent: intent.id, amount: 4000 });
    expect(again.status).toBe('pending');
    expect(sandbox.settle().map((refund) => [refund.id, refund.status])).toEqual([[again.id, 'succeeded']]);
  });

  it('settle immediate (the default): the answer says pending and the refund has succeeded right after', async () => {
    const sandbox = await useSandbox();
    const stripe = sandbox.stripe();
    const intent = await sandbox.createPaymentIntent(5000);
    const refund = await stripe.refunds.create({ payment_intent: intent.id, amount: 700 });
    expect(refund.status).toBe('pending');
    expect((await stripe.refunds.retrieve(refund.id)).status).toBe('succeeded');
    expect(sandbox.handRefund(intent.id, 300).status).toBe('pending');
    expect(sandbox.refunds(intent.id).map((r) => r.status)).toEqual(['succeeded', 'succeeded']);
  });

  it('settle at_create: the create answers succeeded, as Stripe test mode usually creates card refunds; the replay and the ledger say the same', async () => {
    const listener = await useWebhookListener();
    const sandbox = await useSandbox({ settle: 'at_create', webhook: { url: listener.url, secret: 'whsec_at_create' } });
    const stripe = sandbox.stripe();
    const intent = await sandbox.createPaymentIntent(5000);
    const refund = await stripe.refunds.create({ payment_intent: intent.id, amount: 700 }, { idempotencyKey: 'at-create' });
    expect(refund.status).toBe('succeeded');
    expect((await stripe.refunds.create({ payment_intent: intent.id, amount: 700 }, { idempotencyKey: 'at-create' })).status).toBe('succeeded');
    expect(sandbox.handRefund(intent.id, 300).status).toBe('succeeded');
    expect(sandbox.refunds(intent.id).map((r) => r.status)).toEqual(['succeeded', 'succeeded']);
    expect(await stripe.charges.retrieve(String(intent.latest_charge))).toMatchObject({ amount_refunded: 1000 });
    // Nothing is left to settle, so nothing is updated: each refund's only event is its creation, succeeded.
    expect(sandbox.settle()).toEqual([]);
    await sandbox.webhooksIdle();
    const events = listener.received.map((hook) => Stripe.webhooks.constructEvent(hook.rawBody, String(hook.headers['stripe-signature']), 'whsec_at_create'));
    expect(events.map((event) => [event.type, (event.data.object as Stripe.Refund).status])).toEqual([
      ['refund.created', 'succeeded'],
      ['refund.created', 'succeeded'],
    ]);
    expect(sandbox.configure({ settle: 'manual' }).settle).toBe('manual');
    expect((await stripe.refunds.create({ payment_intent: intent.id, amount: 100 })).status).toBe('pending');
  });

  it('metadata: more than 50 keys is refused, as Stripe does', async () => {
    const sandbox = await useSandbox();
    const intent = await sandbox.createPaymentIntent(5000);
    const metadata = Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, 'v']));
    const error = await rejectionOf(sandbox.stripe().refunds.create({ payment_intent: intent.id, metadata }));
    expect(error).toMatchObject({ statusCode: 400, param: 'metadata' });
  });
});
