import Stripe from 'stripe';
import { describe, expect, it } from 'vitest';
import { sandboxLimits } from '../../server/sandbox/index.ts';
import { manualClock, rejectionOf, type SdkError, useSandbox } from './support.ts';

const DAY_MS = 86_400_000;

describe('sandbox idempotency keys, as Stripe keeps them', () => {
  it('replay: the same key and parameters return the same refund, marked Idempotent-Replayed, and create no second one', async () => {
    const sandbox = await useSandbox();
    const stripe = sandbox.stripe();
    const intent = await sandbox.createPaymentIntent(5000);
    const params = { payment_intent: intent.id, amount: 1500, metadata: { effect_id: 'eff_a' } };
    const first = await stripe.refunds.create(params, { idempotencyKey: 'refund-eff_a' });
    const second = await stripe.refunds.create(params, { idempotencyKey: 'refund-eff_a' });
    expect(second.id).toBe(first.id);
    expect(second).toEqual(first);
    expect(first.lastResponse.headers['idempotent-replayed']).toBeUndefined();
    expect(second.lastResponse.headers['idempotent-replayed']).toBe('true');
    expect(second.lastResponse.headers['original-request']).toBe(first.lastResponse.requestId);
    expect(second.lastResponse.idempotencyKey).toBe('refund-eff_a');
    expect(sandbox.refunds(intent.id)).toHaveLength(1);
  });

  it('mismatch: the same key with other parameters is a 400 idempotency_error (StripeIdempotencyError)', async () => {
    const sandbox = await useSandbox();
    const stripe = sandbox.stripe();
    const intent = await sandbox.createPaymentIntent(5000);
    await stripe.refunds.create({ payment_intent: intent.id, amount: 1500 }, { idempotencyKey: 'k' });
    const error = await rejectionOf(
      stripe.refunds.create({ payment_intent: intent.id, amount: 1501 }, { idempotencyKey: 'k' }),
    );
    expect(error).toBeInstanceOf(Stripe.errors.StripeIdempotencyError);
    expect(error).toMatchObject({ statusCode: 400, rawType: 'idempotency_error' });
    expect(sandbox.refunds(intent.id)).toHaveLength(1);
  });

  it('mismatch: the same key on another endpoint is a 400 idempotency_error', async () => {
    const sandbox = await useSandbox();
    const stripe = sandbox.stripe();
    const intent = await sandbox.createPaymentIntent(5000);
    await stripe.refunds.create({ payment_intent: intent.id, amount: 100 }, { idempotencyKey: 'shared' });
    const error = await rejectionOf(
      stripe.paymentIntents.create({ amount: 100, currency: 'usd' }, { idempotencyKey: 'shared' }),
    );
    expect(error).toBeInstanceOf(Stripe.errors.StripeIdempotencyError);
    expect(error.message).toContain("'POST /v1/refunds' vs 'POST /v1/payment_intents'");
  });

  it('parameter order does not matter: the same pairs in another order replay', async () => {
    const sandbox = await useSandbox();
    const intent = await sandbox.createPaymentIntent(5000);
    const post = (body: string) =>
      fetch(`${sandbox.url}/v1/refunds`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${sandbox.apiKey}`,
          'content-type': 'application/x-www-form-urlencoded',
          'idempotency-key': 'ordered',
        },
        body,
      });
    const first = await post(`payment_intent=${intent.id}&amount=100&metadata[a]=1&metadata[b]=2`);
    const second = await post(`metadata[b]=2&amount=100&metadata[a]=1&payment_intent=${intent.id}`);
    expect(second.status).toBe(200);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    expect(await second.text()).toBe(await first.text());
  });

  it('a 500 from the endpoint is saved and replayed for the same key; a new key runs afresh', async () => {
    const sandbox = await useSandbox();
    const stripe = sandbox.stripe();
    const intent = await sandbox.createPaymentIntent(5000);
    sandbox.setFault({ on: 'refund_create', action: 'error_500' });
    const params = { payment_intent: intent.id, amount: 900 };
    const first = await rejectionOf(stripe.refunds.create(params, { idempotencyKey: 'k500' }));
    expect(first).toBeInstanceOf(Stripe.errors.StripeAPIError);
    expect(first.statusCode).toBe(500);
    const replay = await rejectionOf(stripe.refunds.create(params, { idempotencyKey: 'k500' }));
    expect(replay.statusCode).toBe(500);
    expect(replay.headers?.['idempotent-replayed']).toBe('true');
    expect(sandbox.refunds()).toHaveLength(0);
    const fresh = await stripe.refunds.create(params, { idempotencyKey: 'k500-2' });
    expect(sandbox.refunds().map((refund) => refund.id)).toEqual([fresh.id]);
  });

  it('a validation refusal is not saved: the same key with good parameters then runs', async () => {
    const sandbox = await useSandbox();
    const stripe = sandbox.stripe();
    const intent = await sandbox.createPaymentIntent(5000);
    const refused = await rejectionOf(
      stripe.refunds.create({ payment_intent: intent.id, amount: 0 }, { idempotencyKey: 'kv' }),
    );
    expect(refused.statusCode).toBe(400);
    const created = await stripe.refunds.create({ payment_intent: intent.id, amount: 100 }, { idempotencyKey: 'kv' });
    expect(created.lastResponse.headers['idempotent-replayed']).toBeUndefined();
    expect(sandbox.refunds()).toHaveLength(1);
  });

  it('an amount_too_large refusal is not saved: once a failed refund frees the amount, the same request runs', async () => {
    const sandbox = await useSandbox({ settle: 'manual' });
    const stripe = sandbox.stripe();
    const intent = await sandbox.createPaymentIntent(5000);
    const blocking = await stripe.refunds.create({ payment_intent: intent.id, amount: 3000 });
    const params = { payment_intent: intent.id, amount: 3000 };
    const refused = await rejectionOf(stripe.refunds.create(params, { idempotencyKey: 'kt' }));
    expect(refused.code).toBe('amount_too_large');
    sandbox.settle(blocking.id, 'failed');
    const created = await stripe.refunds.create(params, { idempotencyKey: 'kt' });
    expect(created.amount).toBe(3000);
  });

  it('keys are forgotten 24 h after first use on the sandbox clock: then the same key makes a new refund', async () => {
    // A still base clock, so that only the sandbox's own advance moves time.
    const sandbox = await useSandbox({ clockMs: manualClock().nowMs });
    const stripe = sandbox.stripe();
    const intent = await sandbox.createPaymentIntent(5000);
    const params = { payment_intent: intent.id, amount: 100 };
    const first = await stripe.refunds.create(params, { idempotencyKey: 'aging' });
    sandbox.advanceClock(DAY_MS - 1);
    const stillSaved = await stripe.refunds.create(params, { idempotencyKey: 'aging' });
    expect(stillSaved.id).toBe(first.id);
    sandbox.advanceClock(1);
    const afterWindow = await stripe.refunds.create(params, { idempotencyKey: 'aging' });
    expect(afterWindow.id).not.toBe(first.id);
    expect(afterWindow.lastResponse.headers['idempotent-replayed']).toBeUndefined();
    expect(sandbox.refunds(intent.id)).toHaveLength(2);
  });

  it('a request with a key still executing gets 409 idempotency_key_in_use, which is not saved', async () => {
    const sandbox = await useSandbox();
    const stripe = sandbox.stripe();
    const intent = await sandbox.createPaymentIntent(5000);
    // Whichever request arrives first takes the delay and holds the key; the other meets it in use.
    sandbox.setFault({ on: 'refund_create', action: 'delay', delayMs: 1_000 });
    const params = { payment_intent: intent.id, amount: 100 };
    const outcomes = await Promise.allSettled([
      stripe.refunds.create(params, { idempotencyKey: 'busy' }),
      new Promise((resolve) => setTimeout(resolve, 50)).then(() =>
        stripe.refunds.create(params, { idempotencyKey: 'busy' }),
      ),
    ]);
    const created = outcomes.flatMap((outcome) => (outcome.status === 'fulfilled' ? [outcome.value] : []));
    const refused = outcomes.flatMap((outcome) => (outcome.status === 'rejected' ? [outcome.reason as SdkError] : []));
    expect(created).toHaveLength(1);
    expect(refused).toHaveLength(1);
    expect(refused[0]).toMatchObject({ statusCode: 409, code: 'idempotency_key_in_use' });
    const replay = await stripe.refunds.create(params, { idempotencyKey: 'busy' });
    expect(replay.id).toBe(created[0]!.id);
    expect(replay.lastResponse.headers['idempotent-replayed']).toBe('true');
    expect(sandbox.refunds()).toHaveLength(1);
  });

  it('keys longer than 255 characters are refused and not saved', async () => {
    const sandbox = await useSandbox();
    const stripe = sandbox.stripe();
    const intent = await sandbox.createPaymentIntent(5000);
    const longest = 'k'.repeat(sandboxLimits.idempotencyKeyCharsMax);
    const tooLong = await rejectionOf(
      stripe.refunds.create({ payment_intent: intent.id, amount: 100 }, { idempotencyKey: `${longest}k` }),
    );
    expect(tooLong).toMatchObject({ statusCode: 400, param: 'idempotency_key' });
    await stripe.refunds.create({ payment_intent: intent.id, amount: 100 }, { idempotencyKey: longest });
    expect(sandbox.refunds()).toHaveLength(1);
  });

  it('payment intents are keyed too: a replay returns the same payment intent', async () => {
    const sandbox = await useSandbox();
    const stripe = sandbox.stripe();
    const params = { amount: 800, currency: 'usd', payment_method: 'pm_card_visa', confirm: true };
    const first = await stripe.paymentIntents.create(params, { idempotencyKey: 'pi-key' });
    const second = await stripe.paymentIntents.create(params, { idempotencyKey: 'pi-key' });
    expect(second.id).toBe(first.id);
    expect(second.lastResponse.headers['idempotent-replayed']).toBe('true');
  });
});
