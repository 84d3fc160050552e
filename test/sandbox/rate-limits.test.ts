import Stripe from 'stripe';
import { describe, expect, it } from 'vitest';
import { CONTROL_ROUTES, type RequestCounts } from '../../server/sandbox/index.ts';
import { manualClock, rejectionOf, type SdkError, useSandbox } from './support.ts';

// Stripe's published limits (spec/stripe.md): per account 25 operations a second in test mode
// and sandboxes, 100 live, and 25 a second for each endpoint (each named operation), counted
// against the global limit too. The sandbox holds them in a sliding one-second window on its
// clock: no second, wherever it starts, lets more through. Beyond a limit it answers 429
// rate_limit before anything runs, so nothing is made and nothing is saved under the key.

/** Settle every call, in order: its value, or the SDK error it failed with. */
async function outcomes<T>(calls: Array<() => Promise<T>>): Promise<Array<T | SdkError>> {
  const settled = await Promise.allSettled(calls.map((call) => call()));
  return settled.map((one) => (one.status === 'fulfilled' ? one.value : (one.reason as SdkError)));
}

const isRateLimited = (value: unknown) => value instanceof Stripe.errors.StripeRateLimitError;

describe('sandbox rate limits, as Stripe publishes them', () => {
  it('off (the default): a burst of a hundred reads is answered, none refused', async () => {
    const sandbox = await useSandbox({ clockMs: manualClock().nowMs });
    const intent = await sandbox.createPaymentIntent(5_000);
    const answers = await outcomes(Array.from({ length: 100 }, () => () => sandbox.stripe().paymentIntents.retrieve(intent.id)));
    expect(answers.filter(isRateLimited)).toHaveLength(0);
    expect(sandbox.settings().rateLimits).toBe('off');
  });

  it('test: the 26th read of one endpoint within a second is 429 rate_limit, in Stripe’s shape and as the SDK raises it; a second later it is answered', async () => {
    const clock = manualClock();
    const sandbox = await useSandbox({ clockMs: clock.nowMs, rateLimits: 'test' });
    const intent = await sandbox.createPaymentIntent(5_000);
    const stripe = sandbox.stripe();
    for (let i = 0; i < 25; i += 1) await stripe.paymentIntents.retrieve(intent.id);
    const refused = await rejectionOf(stripe.paymentIntents.retrieve(intent.id));
    expect(refused).toBeInstanceOf(Stripe.errors.StripeRateLimitError);
    expect(refused).toMatchObject({
      statusCode: 429,
      type: 'StripeRateLimitError',
      rawType: 'invalid_request_error',
      code: 'rate_limit',
      doc_url: 'https://stripe.com/docs/error-codes/rate-limit',
      message: 'Request rate limit exceeded. Learn more about rate limits here https://stripe.com/docs/rate-limits.',
    });
    // Stripe says nothing to make a client retry a rate limit at once.
    expect(refused.headers?.['stripe-should-retry']).toBeUndefined();
    const wire = await fetch(`${sandbox.url}/v1/payment_intents/${intent.id}`, { headers: { authorization: `Bearer ${sandbox.apiKey}` } });
    expect([wire.status, await wire.json()]).toEqual([
      429,
      {
        error: {
          code: 'rate_limit',
          doc_url: 'https://stripe.com/docs/error-codes/rate-limit',
          message: 'Request rate limit exceeded. Learn more about rate limits here https://stripe.com/docs/rate-limits.',
          type: 'invalid_request_error',
        },
      },
    ]);
    clock.advance(999);
    expect(await rejectionOf(stripe.paymentIntents.retrieve(intent.id))).toBeInstanceOf(Stripe.errors.StripeRateLimitError);
    clock.advance(1);
    expect((await stripe.paymentIntents.retrieve(intent.id)).id).toBe(intent.id);
  });

  it('test: the window slides, so no second starting anywhere lets more than 25 of one endpoint through', async () => {
    const clock = manualClock();
    const sandbox = await useSandbox({ clockMs: clock.nowMs, rateLimits: 'test' });
    const intent = await sandbox.createPaymentIntent(5_000);
    const admittedAtMs: number[] = [];
    // One read every 10 ms for three seconds: a fixed window would let 25 through at the end of
    // one second and 25 more at the start of the next.
    for (let step = 0; step < 300; step += 1) {
      const answer = await outcomes([() => sandbox.stripe().paymentIntents.retrieve(intent.id)]);
      if (!isRateLimited(answer[0])) admittedAtMs.push(clock.nowMs());
      clock.advance(10);
    }
    for (const startMs of admittedAtMs) {
      expect(admittedAtMs.filter((atMs) => atMs >= startMs && atMs < startMs + 1_000).length).toBeLessThanOrEqual(25);
    }
    expect(admittedAtMs).toHaveLength(75);
  });

  it('test: endpoints share the global 25 a second, so two endpoints together get 25, not 50', async () => {
    const sandbox = await useSandbox({ clockMs: manualClock().nowMs, rateLimits: 'test' });
    const intent = await sandbox.createPaymentIntent(5_000);
    const stripe = sandbox.stripe();
    const calls = Array.from({ length: 40 }, (_, i) =>
      i % 2 === 0 ? () => stripe.paymentIntents.retrieve(intent.id) : () => stripe.refunds.list({ payment_intent: intent.id }),
    );
    const answers = await outcomes<unknown>(calls);
    expect(answers.filter((answer) => !isRateLimited(answer))).toHaveLength(25);
  });

  it('live: 100 a second for the account, but still 25 for each endpoint', async () => {
    const sandbox = await useSandbox({ clockMs: manualClock().nowMs, rateLimits: 'live' });
    const intent = await sandbox.createPaymentIntent(5_000);
    const stripe = sandbox.stripe();
    const oneEndpoint = await outcomes(Array.from({ length: 30 }, () => () => stripe.paymentIntents.retrieve(intent.id)));
    expect(oneEndpoint.filter((answer) => !isRateLimited(answer))).toHaveLength(25);
    const reads: Array<() => Promise<unknown>> = [
      () => stripe.refunds.list({ payment_intent: intent.id }),
      () => stripe.charges.retrieve(String(intent.latest_charge)),
      () => stripe.disputes.list({ payment_intent: intent.id }),
      () => stripe.customers.retrieve(String(intent.customer)),
      () => stripe.paymentMethods.retrieve(String(intent.payment_method)),
    ];
    const fourMore = await outcomes(Array.from({ length: 100 }, (_, i) => reads[i % reads.length]!));
    // 25 of the payment intent's reads are in the window already: 75 more fit in the account's 100.
    expect(fourMore.filter((answer) => !isRateLimited(answer))).toHaveLength(75);
  });

  it('a refund refused by the limiter is not made and not saved under its key: the same key later makes it once', async () => {
    const clock = manualClock();
    const sandbox = await useSandbox({ clockMs: clock.nowMs, rateLimits: 'test', settle: 'manual' });
    const intent = await sandbox.createPaymentIntent(50_000);
    const stripe = sandbox.stripe();
    const creates = Array.from({ length: 30 }, (_, i) => () => stripe.refunds.create({ payment_intent: intent.id, amount: 100 }, { idempotencyKey: `burst-${i}` }));
    const answers = await outcomes<unknown>(creates);
    const refusedKeys = answers.flatMap((answer, i) => (isRateLimited(answer) ? [`burst-${i}`] : []));
    expect(refusedKeys).toHaveLength(5);
    expect(sandbox.refunds(intent.id)).toHaveLength(25);
    clock.advance(1_000);
    const [key] = refusedKeys;
    const made = await stripe.refunds.create({ payment_intent: intent.id, amount: 100 }, { idempotencyKey: key! });
    expect(made.lastResponse.headers['idempotent-replayed']).toBeUndefined();
    const again = await stripe.refunds.create({ payment_intent: intent.id, amount: 100 }, { idempotencyKey: key! });
    expect(again.id).toBe(made.id);
    expect(sandbox.refunds(intent.id)).toHaveLength(26);
  });

  it('counts what it answered, per endpoint: through, rate limited, unauthorized, and each request as it arrived; on the handle and the control route, and reset', async () => {
    const sandbox = await useSandbox({ clockMs: manualClock().nowMs, rateLimits: 'test' });
    const intent = await sandbox.createPaymentIntent(5_000);
    const stripe = sandbox.stripe();
    await outcomes(Array.from({ length: 27 }, () => () => stripe.paymentIntents.retrieve(intent.id)));
    await fetch(`${sandbox.url}/v1/refunds`);
    const counts = sandbox.requestCounts();
    expect(counts.endpoints['GET /v1/payment_intents/:id']).toEqual({ through: 25, rate_limited: 2, lock_timeout: 0, unauthorized: 0, forbidden: 0 });
    expect(counts.endpoints['GET /v1/refunds']).toEqual({ through: 0, rate_limited: 0, lock_timeout: 0, unauthorized: 1, forbidden: 0 });
    expect(counts.total).toEqual({ through: 25, rate_limited: 2, lock_timeout: 0, unauthorized: 1, forbidden: 0 });
    // Each request as it arrived, on the sandbox clock (a manual one here, so all at one instant).
    expect(counts.arrivals).toHaveLength(28);
    expect(counts.arrivals.filter((a) => a.operation === 'GET /v1/payment_intents/:id' && a.outcome === 'rate_limited')).toHaveLength(2);
    expect(new Set(counts.arrivals.map((a) => a.atMs))).toEqual(new Set([sandbox.nowMs()]));
    const [method, path] = CONTROL_ROUTES.requestCounts.split(' ');
    const overHttp = (await (await fetch(`${sandbox.url}${path}`, { method })).json()) as RequestCounts;
    expect(overHttp).toEqual(counts);
    sandbox.resetRequestCounts();
    expect(sandbox.requestCounts()).toEqual({ total: { through: 0, rate_limited: 0, lock_timeout: 0, unauthorized: 0, forbidden: 0 }, endpoints: {}, arrivals: [] });
  });

  it('the limit changes at run time over the control route, and the health route says which is in force', async () => {
    const sandbox = await useSandbox({ clockMs: manualClock().nowMs });
    const intent = await sandbox.createPaymentIntent(5_000);
    const post = (body: unknown) =>
      fetch(`${sandbox.url}${CONTROL_ROUTES.configure.split(' ')[1]}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const changed = await post({ rateLimits: 'test' });
    expect(await changed.json()).toMatchObject({ rateLimits: 'test', settle: 'immediate' });
    const answers = await outcomes(Array.from({ length: 26 }, () => () => sandbox.stripe().paymentIntents.retrieve(intent.id)));
    expect(answers.filter(isRateLimited)).toHaveLength(1);
    const health = (await (await fetch(`${sandbox.url}/_sandbox/health`)).json()) as Record<string, unknown>;
    expect(health).toMatchObject({ ok: true, settings: { rateLimits: 'test' } });
    const refused = await post({ rateLimits: 'fast' });
    expect(refused.status).toBe(400);
    expect(await refused.json()).toMatchObject({ error: { param: 'rateLimits', message: 'rateLimits must be one of off, test, live.' } });
    await post({ rateLimits: 'off' });
    expect((await outcomes([() => sandbox.stripe().paymentIntents.retrieve(intent.id)])).filter(isRateLimited)).toHaveLength(0);
  });
});
