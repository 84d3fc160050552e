import Stripe from 'stripe';
import { describe, expect, it } from 'vitest';
import { rejectionOf, useSandbox } from './support.ts';

describe('sandbox payment intents, charges and disputes through the real SDK', () => {
  it('payment intent: confirm=true with pm_card_visa succeeds, receives the amount and has a charge', async () => {
    const sandbox = await useSandbox();
    const intent = await sandbox.stripe().paymentIntents.create({
      amount: 4200,
      currency: 'usd',
      payment_method: 'pm_card_visa',
      confirm: true,
      metadata: { order: 'o-1' },
    });
    expect(intent).toMatchObject({
      object: 'payment_intent',
      status: 'succeeded',
      amount: 4200,
      amount_received: 4200,
      currency: 'usd',
      livemode: false,
      metadata: { order: 'o-1' },
    });
    expect(intent.id).toMatch(/^pi_[0-9A-Za-z]{24}$/);
    expect(intent.latest_charge).toMatch(/^ch_/);
    expect(intent.lastResponse.requestId).toMatch(/^req_/);
  });

  it('payment intent: created without confirm it waits, and POST /confirm makes it succeed', async () => {
    const sandbox = await useSandbox();
    const stripe = sandbox.stripe();
    const created = await stripe.paymentIntents.create({
      amount: 1500,
      currency: 'eur',
      payment_method: 'pm_card_visa',
    });
    expect(created).toMatchObject({ status: 'requires_confirmation', amount_received: 0, latest_charge: null });
    const confirmed = await stripe.paymentIntents.confirm(created.id);
    expect(confirmed).toMatchObject({ id: created.id, status: 'succeeded', amount_received: 1500 });
    const again = await rejectionOf(stripe.paymentIntents.confirm(created.id));
    expect(again).toMatchObject({ statusCode: 400, code: 'payment_intent_unexpected_state' });
  });

  it('retrieve: the payment intent and its charge read back; an unknown id is 404 resource_missing', async () => {
    const sandbox = await useSandbox();
    const stripe = sandbox.stripe();
    const intent = await sandbox.createPaymentIntent(2500);
    expect(await stripe.paymentIntents.retrieve(intent.id)).toMatchObject({ id: intent.id, status: 'succeeded' });
    const charge = await stripe.charges.retrieve(intent.latest_charge as string);
    expect(charge).toMatchObject({
      object: 'charge',
      amount: 2500,
      amount_refunded: 0,
      refunded: false,
      disputed: false,
      payment_intent: intent.id,
      status: 'succeeded',
      paid: true,
    });
    const missing = await rejectionOf(stripe.paymentIntents.retrieve('pi_nope'));
    expect(missing).toBeInstanceOf(Stripe.errors.StripeInvalidRequestError);
    expect(missing).toMatchObject({ statusCode: 404, code: 'resource_missing' });
    expect(await rejectionOf(stripe.charges.retrieve('ch_nope'))).toMatchObject({
      statusCode: 404,
      code: 'resource_missing',
    });
  });

  it('pm_card_createDispute: the payment succeeds, a dispute needing a response opens and the charge is disputed', async () => {
    const sandbox = await useSandbox();
    const stripe = sandbox.stripe();
    const intent = await sandbox.createPaymentIntent(3000, 'pm_card_createDispute');
    expect(intent.status).toBe('succeeded');
    const charge = await stripe.charges.retrieve(intent.latest_charge as string);
    expect(charge.disputed).toBe(true);
    const disputes = await stripe.disputes.list({ payment_intent: intent.id });
    expect(disputes.data).toHaveLength(1);
    expect(disputes.data[0]).toMatchObject({
      object: 'dispute',
      status: 'needs_response',
      charge: charge.id,
      payment_intent: intent.id,
      amount: 3000,
    });
    expect(disputes.data[0]!.id).toMatch(/^dp_/);
    expect(await stripe.disputes.retrieve(disputes.data[0]!.id)).toMatchObject({ id: disputes.data[0]!.id });
  });

  it('openDispute: a dispute opened later marks the charge disputed; a second one is refused', async () => {
    const sandbox = await useSandbox();
    const intent = await sandbox.createPaymentIntent(3000);
    expect((await sandbox.stripe().disputes.list({ payment_intent: intent.id })).data).toHaveLength(0);
    const dispute = sandbox.openDispute(intent.id);
    expect(dispute).toMatchObject({ status: 'needs_response', payment_intent: intent.id });
    expect((await sandbox.stripe().charges.retrieve(intent.latest_charge as string)).disputed).toBe(true);
    expect(() => sandbox.openDispute(intent.id)).toThrow(/already disputed/);
    expect(() => sandbox.openDispute('pi_unknown')).toThrow(/No such payment_intent/);
  });

  it('auth: no key or a live key is refused with 401; sk_test_ and rk_test_ keys are accepted', async () => {
    const sandbox = await useSandbox();
    const withKey = (key: string) =>
      new Stripe(key, {
        host: sandbox.host,
        port: sandbox.port,
        protocol: 'http',
        maxNetworkRetries: 0,
        telemetry: false,
      });
    const live = await rejectionOf(withKey('sk_live_x').paymentIntents.retrieve('pi_x'));
    expect(live).toBeInstanceOf(Stripe.errors.StripeAuthenticationError);
    expect(live).toMatchObject({ statusCode: 401, code: undefined });
    const bare = await fetch(`${sandbox.url}/v1/refunds`);
    expect(bare.status).toBe(401);
    expect(await bare.json()).toMatchObject({
      error: { type: 'invalid_request_error' },
    });
    const restricted = await rejectionOf(withKey('rk_test_x').paymentIntents.retrieve('pi_x'));
    expect(restricted).toMatchObject({ statusCode: 404 });
  });

  it('parameters: an unknown one or a missing currency is refused with 400, as Stripe does', async () => {
    const sandbox = await useSandbox();
    const stripe = sandbox.stripe();
    const unknown = await rejectionOf(
      stripe.paymentIntents.create({ amount: 100, currency: 'usd', colour: 'red' } as Stripe.PaymentIntentCreateParams),
    );
    expect(unknown).toMatchObject({ statusCode: 400, code: 'parameter_unknown', param: 'colour' });
    const noCurrency = await rejectionOf(
      stripe.paymentIntents.create({ amount: 100 } as Stripe.PaymentIntentCreateParams),
    );
    expect(noCurrency).toMatchObject({ statusCode: 400, code: 'parameter_missing', param: 'currency' });
    const badMethod = await rejectionOf(
      stripe.paymentIntents.create({ amount: 100, currency: 'usd', payment_method: 'pm_card_x' }),
    );
    expect(badMethod).toMatchObject({ statusCode: 400, code: 'resource_missing', param: 'payment_method' });
  });

  it('unknown URLs answer 404 in Stripe error shape', async () => {
    const sandbox = await useSandbox();
    const response = await fetch(`${sandbox.url}/v1/payouts`, {
      headers: { authorization: `Bearer ${sandbox.apiKey}` },
    });
    expect(response.status).toBe(404);
    expect(response.headers.get('request-id')).toMatch(/^req_/);
    expect(await response.json()).toMatchObject({ error: { type: 'invalid_request_error' } });
  });
});
