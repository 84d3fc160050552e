import Stripe from 'stripe';
import { describe, expect, it } from 'vitest';
import { rejectionOf, useSandbox } from './support.ts';

// Errors as Stripe answers them, read from outside: a missing object named in a parameter is a
// 400 (the object in the path is the 404), every error with a code carries its `doc_url`, and a
// 401 for a missing or wrong key has no code at all (Stripe sends none; `authentication_required`
// is a card decline code, for 3D Secure).

/** The raw error body of a request made with fetch, as Stripe's wire format has it. */
async function wireError(response: Response): Promise<{ status: number; error: Record<string, unknown> }> {
  return { status: response.status, error: ((await response.json()) as { error: Record<string, unknown> }).error };
}

describe('sandbox errors in Stripe’s shape', () => {
  it('a refund of a missing payment intent or charge is 400 resource_missing naming the parameter, and nothing is saved for the key', async () => {
    const sandbox = await useSandbox();
    const stripe = sandbox.stripe();
    const missing = await rejectionOf(stripe.refunds.create({ payment_intent: 'pi_missing', amount: 100 }, { idempotencyKey: 'k-missing' }));
    expect(missing).toBeInstanceOf(Stripe.errors.StripeInvalidRequestError);
    expect(missing).toMatchObject({
      statusCode: 400,
      code: 'resource_missing',
      param: 'payment_intent',
      message: "No such payment_intent: 'pi_missing'",
      doc_url: 'https://stripe.com/docs/error-codes/resource-missing',
    });
    const byCharge = await rejectionOf(stripe.refunds.create({ charge: 'ch_missing' }));
    expect(byCharge).toMatchObject({ statusCode: 400, code: 'resource_missing', param: 'charge' });
    const intent = await sandbox.createPaymentIntent(5_000);
    expect(await rejectionOf(stripe.paymentIntents.create({ amount: 100, currency: 'usd', customer: 'cus_missing' }))).toMatchObject({
      statusCode: 400,
      code: 'resource_missing',
      param: 'customer',
    });
    expect(await rejectionOf(stripe.paymentIntents.create({ amount: 100, currency: 'usd', payment_method: 'pm_card_x' }))).toMatchObject({
      statusCode: 400,
      code: 'resource_missing',
      param: 'payment_method',
    });
    // The key was never used: a real payment intent under it now makes a refund.
    const made = await stripe.refunds.create({ payment_intent: intent.id, amount: 100 }, { idempotencyKey: 'k-missing' });
    expect(made.lastResponse.headers['idempotent-replayed']).toBeUndefined();
  });

  it('a list filtered by a missing payment intent or charge, or paged from a missing cursor, is 400 resource_missing naming the parameter', async () => {
    const sandbox = await useSandbox();
    const stripe = sandbox.stripe();
    expect(await rejectionOf(stripe.refunds.list({ payment_intent: 'pi_missing' }))).toMatchObject({
      statusCode: 400,
      code: 'resource_missing',
      param: 'payment_intent',
      message: "No such payment_intent: 'pi_missing'",
    });
    expect(await rejectionOf(stripe.refunds.list({ charge: 'ch_missing' }))).toMatchObject({ statusCode: 400, param: 'charge' });
    expect(await rejectionOf(stripe.disputes.list({ payment_intent: 'pi_missing' }))).toMatchObject({ statusCode: 400, param: 'payment_intent' });
    expect(await rejectionOf(stripe.refunds.list({ starting_after: 're_missing' }))).toMatchObject({ statusCode: 400, param: 'starting_after' });
    // A payment with no refunds is an empty list, not an error.
    const intent = await sandbox.createPaymentIntent(5_000);
    expect((await stripe.refunds.list({ payment_intent: intent.id })).data).toEqual([]);
  });

  it('a missing object in the path stays 404 resource_missing', async () => {
    const sandbox = await useSandbox();
    const stripe = sandbox.stripe();
    for (const call of [stripe.paymentIntents.retrieve('pi_missing'), stripe.refunds.retrieve('re_missing'), stripe.charges.retrieve('ch_missing')]) {
      const error = await rejectionOf(call);
      expect(error).toMatchObject({ statusCode: 404, code: 'resource_missing', doc_url: 'https://stripe.com/docs/error-codes/resource-missing' });
    }
    expect(await rejectionOf(stripe.paymentIntents.confirm('pi_missing'))).toMatchObject({ statusCode: 404, code: 'resource_missing' });
  });

  it('every error with a code carries its doc_url, as Stripe words it', async () => {
    const sandbox = await useSandbox();
    const stripe = sandbox.stripe();
    const intent = await sandbox.createPaymentIntent(5_000);
    const cases: Array<[Promise<unknown>, string]> = [
      [stripe.refunds.create({ payment_intent: intent.id, amount: 9_999 }), 'amount-too-large'],
      [stripe.refunds.create({ payment_intent: intent.id, amount: 0 }), 'parameter-invalid-integer'],
      [stripe.refunds.create({}), 'parameter-missing'],
      [stripe.refunds.create({ payment_intent: intent.id, colour: 'red' } as Stripe.RefundCreateParams), 'parameter-unknown'],
    ];
    for (const [call, slug] of cases) {
      expect((await rejectionOf(call)).doc_url).toBe(`https://stripe.com/docs/error-codes/${slug}`);
    }
    const wire = await wireError(await fetch(`${sandbox.url}/v1/refunds/re_missing`, { headers: { authorization: `Bearer ${sandbox.apiKey}` } }));
    expect(wire).toEqual({
      status: 404,
      error: {
        code: 'resource_missing',
        doc_url: 'https://stripe.com/docs/error-codes/resource-missing',
        message: "No such refund: 're_missing'",
        param: 'id',
        type: 'invalid_request_error',
      },
    });
  });

  it('a 401 for no key or a live key has Stripe’s wording and no code, the key masked but for its prefix and last four', async () => {
    const sandbox = await useSandbox();
    const bare = await wireError(await fetch(`${sandbox.url}/v1/refunds`));
    expect(bare).toEqual({
      status: 401,
      error: {
        message:
          "You did not provide an API key. You need to provide your API key in the Authorization header, using Bearer auth (e.g. 'Authorization: Bearer YOUR_SECRET_KEY'). See https://stripe.com/docs/api#authentication for details, or we can help at https://support.stripe.com/.",
        type: 'invalid_request_error',
      },
    });
    const live = new Stripe('sk_live_51Habcdefghijklmn1234', { host: sandbox.host, port: sandbox.port, protocol: 'http', maxNetworkRetries: 0, telemetry: false });
    const refused = await rejectionOf(live.paymentIntents.retrieve('pi_x'));
    expect(refused).toBeInstanceOf(Stripe.errors.StripeAuthenticationError);
    expect(refused.code).toBeUndefined();
    expect(refused.message).toBe(`Invalid API Key provided: sk_live_${'*'.repeat(17)}1234`);
  });
});
