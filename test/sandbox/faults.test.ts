import Stripe from 'stripe';
import { describe, expect, it } from 'vitest';
import type { Fault } from '../../server/sandbox/index.ts';
import { rejectionOf, type SdkError, useSandbox } from './support.ts';

describe('sandbox faults on refund creation', () => {
  it('drop_after_commit: the refund is committed, the SDK call rejects with a connection error, the ledger holds exactly one', async () => {
    const sandbox = await useSandbox();
    const intent = await sandbox.createPaymentIntent(5000);
    // The SDK retries a reset connection once even with maxNetworkRetries 0, so drop that retry too.
    sandbox.setFault({ on: 'refund_create', action: 'drop_after_commit', times: 2 });
    const params = { payment_intent: intent.id, amount: 1200, metadata: { effect_id: 'eff_drop' } };
    const error = await rejectionOf(sandbox.stripe().refunds.create(params, { idempotencyKey: 'drop-1' }));
    expect(error).toBeInstanceOf(Stripe.errors.StripeConnectionError);
    expect(sandbox.refunds(intent.id)).toHaveLength(1);
    expect(sandbox.refunds(intent.id)[0]).toMatchObject({ amount: 1200, metadata: { effect_id: 'eff_drop' } });
    const resent = await sandbox.stripe().refunds.create(params, { idempotencyKey: 'drop-1' });
    expect(resent.id).toBe(sandbox.refunds(intent.id)[0]!.id);
    expect(resent.lastResponse.headers['idempotent-replayed']).toBe('true');
    expect(sandbox.refunds(intent.id)).toHaveLength(1);
  });

  it("drop_after_commit once: the SDK's own retry of the reset connection replays the saved refund", async () => {
    const sandbox = await useSandbox();
    const intent = await sandbox.createPaymentIntent(5000);
    sandbox.setFault({ on: 'refund_create', action: 'drop_after_commit' });
    const refund = await sandbox
      .stripe()
      .refunds.create({ payment_intent: intent.id, amount: 100 }, { idempotencyKey: 'drop-once' });
    expect(refund.lastResponse.headers['idempotent-replayed']).toBe('true');
    expect(sandbox.refunds(intent.id).map((r) => r.id)).toEqual([refund.id]);
  });

  it('error_500: answers 500 and creates nothing', async () => {
    const sandbox = await useSandbox();
    const intent = await sandbox.createPaymentIntent(5000);
    sandbox.setFault({ on: 'refund_create', action: 'error_500' });
    const error = await rejectionOf(sandbox.stripe().refunds.create({ payment_intent: intent.id, amount: 100 }));
    expect(error).toBeInstanceOf(Stripe.errors.StripeAPIError);
    expect(error).toMatchObject({ statusCode: 500, rawType: 'api_error' });
    expect(sandbox.refunds()).toHaveLength(0);
  });

  it('error_500_after_commit: answers 500 although the refund exists; the 500 is what the key replays', async () => {
    const sandbox = await useSandbox();
    const intent = await sandbox.createPaymentIntent(5000);
    sandbox.setFault({ on: 'refund_create', action: 'error_500_after_commit' });
    const params = { payment_intent: intent.id, amount: 100 };
    const error = await rejectionOf(sandbox.stripe().refunds.create(params, { idempotencyKey: 'k' }));
    expect(error.statusCode).toBe(500);
    expect(sandbox.refunds()).toHaveLength(1);
    const replay = await rejectionOf(sandbox.stripe().refunds.create(params, { idempotencyKey: 'k' }));
    expect(replay.statusCode).toBe(500);
    expect(replay.headers?.['idempotent-replayed']).toBe('true');
    const listed = await sandbox.stripe().refunds.list({ payment_intent: intent.id });
    expect(listed.data).toHaveLength(1);
  });

  it('error_429: refused by the rate limiter before anything runs; the same key then succeeds', async () => {
    const sandbox = await useSandbox();
    const intent = await sandbox.createPaymentIntent(5000);
    sandbox.setFault({ on: 'refund_create', action: 'error_429' });
    const params = { payment_intent: intent.id, amount: 100 };
    const error = await rejectionOf(sandbox.stripe().refunds.create(params, { idempotencyKey: 'k429' }));
    expect(error).toBeInstanceOf(Stripe.errors.StripeRateLimitError);
    expect(error.statusCode).toBe(429);
    expect(sandbox.refunds()).toHaveLength(0);
    const created = await sandbox.stripe().refunds.create(params, { idempotencyKey: 'k429' });
    expect(created.lastResponse.headers['idempotent-replayed']).toBeUndefined();
    expect(sandbox.refunds()).toHaveLength(1);
  });

  it('delay: the answer comes after delayMs, and the refund is made', async () => {
    const sandbox = await useSandbox();
    const intent = await sandbox.createPaymentIntent(5000);
    sandbox.setFault({ on: 'refund_create', action: 'delay', delayMs: 250 });
    const startedMs = Date.now();
    await sandbox.stripe().refunds.create({ payment_intent: intent.id, amount: 100 });
    expect(Date.now() - startedMs).toBeGreaterThanOrEqual(240);
    expect(sandbox.refunds()).toHaveLength(1);
  });

  it('delay past the client timeout: the SDK gives up, yet the refund is made (an unknown outcome)', async () => {
    const sandbox = await useSandbox();
    const intent = await sandbox.createPaymentIntent(5000);
    sandbox.setFault({ on: 'refund_create', action: 'delay', delayMs: 300 });
    const impatient = new Stripe(sandbox.apiKey, {
      host: sandbox.host,
      port: sandbox.port,
      protocol: 'http',
      maxNetworkRetries: 0,
      telemetry: false,
      timeout: 100,
    });
    const error = await rejectionOf(impatient.refunds.create({ payment_intent: intent.id, amount: 100 }));
    expect(error).toBeInstanceOf(Stripe.errors.StripeConnectionError);
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(sandbox.refunds()).toHaveLength(1);
  });

  it('times and clearFaults: a fault catches as many requests as it says, and clearing drops the rest', async () => {
    const sandbox = await useSandbox();
    const stripe = sandbox.stripe();
    const intent = await sandbox.createPaymentIntent(5000);
    sandbox.setFault({ on: 'refund_create', action: 'error_500', times: 2 });
    for (let i = 0; i < 2; i += 1) {
      expect((await rejectionOf(stripe.refunds.create({ payment_intent: intent.id, amount: 100 }))).statusCode).toBe(
        500,
      );
    }
    await stripe.refunds.create({ payment_intent: intent.id, amount: 100 });
    sandbox.setFault({ on: 'refund_create', action: 'error_500', times: 5 });
    sandbox.clearFaults();
    await stripe.refunds.create({ payment_intent: intent.id, amount: 100 });
    expect(sandbox.refunds()).toHaveLength(2);
  });

  it('a refusal by validation does not use up an execution fault', async () => {
    const sandbox = await useSandbox();
    const stripe = sandbox.stripe();
    const intent = await sandbox.createPaymentIntent(5000);
    sandbox.setFault({ on: 'refund_create', action: 'error_500' });
    expect((await rejectionOf(stripe.refunds.create({ payment_intent: intent.id, amount: 9999 }))).statusCode).toBe(
      400,
    );
    expect((await rejectionOf(stripe.refunds.create({ payment_intent: intent.id, amount: 100 }))).statusCode).toBe(500);
  });

  it('lock_timeout: the next refund creates on one payment intent answer 429 lock_timeout with nothing made or saved; other payments go through', async () => {
    const sandbox = await useSandbox({ settle: 'manual' });
    const stripe = sandbox.stripe();
    const locked = await sandbox.createPaymentIntent(5000);
    const other = await sandbox.createPaymentIntent(5000);
    sandbox.setFault({ on: 'refund_create', action: 'lock_timeout', paymentIntent: locked.id, times: 2 });
    const params = { payment_intent: locked.id, amount: 100 };
    const first = await rejectionOf(stripe.refunds.create(params, { idempotencyKey: 'locked-1' }));
    expect(first).toBeInstanceOf(Stripe.errors.StripeRateLimitError);
    expect(first).toMatchObject({
      statusCode: 429,
      code: 'lock_timeout',
      rawType: 'invalid_request_error',
      doc_url: 'https://stripe.com/docs/error-codes/lock-timeout',
    });
    expect(first.message).toMatch(/^This object cannot be accessed right now because another API request or Stripe process is currently accessing it\./);
    expect((await stripe.refunds.create({ payment_intent: other.id, amount: 100 })).payment_intent).toBe(other.id);
    // By charge it is the same object, so the same lock.
    expect((await rejectionOf(stripe.refunds.create({ charge: String(locked.latest_charge), amount: 100 }))).code).toBe('lock_timeout');
    expect(sandbox.refunds(locked.id)).toHaveLength(0);
    const made = await stripe.refunds.create(params, { idempotencyKey: 'locked-1' });
    expect(made.lastResponse.headers['idempotent-replayed']).toBeUndefined();
    expect(sandbox.refunds(locked.id).map((refund) => refund.id)).toEqual([made.id]);
    expect(sandbox.requestCounts().endpoints['POST /v1/refunds']).toEqual({ through: 2, rate_limited: 0, lock_timeout: 2, unauthorized: 0, forbidden: 0 });
  });

  it('lock_timeout with a share: that share of the matching refund creates meets the lock, spread evenly, until its times are used', async () => {
    const sandbox = await useSandbox({ settle: 'manual' });
    const intent = await sandbox.createPaymentIntent(50_000);
    sandbox.setFault({ on: 'refund_create', action: 'lock_timeout', share: 0.5, times: 3 });
    const codes: string[] = [];
    for (let i = 0; i < 10; i += 1) {
      const answer = await sandbox
        .stripe()
        .refunds.create({ payment_intent: intent.id, amount: 100 })
        .then(() => 'made', (error: SdkError) => error.code ?? String(error.statusCode));
      codes.push(answer);
    }
    expect(codes).toEqual(['made', 'lock_timeout', 'made', 'lock_timeout', 'made', 'lock_timeout', 'made', 'made', 'made', 'made']);
    expect(sandbox.refunds(intent.id)).toHaveLength(7);
  });

  it.each([
    [{ on: 'refund_create', action: 'explode' }, /action/],
    [{ on: 'charge_create', action: 'error_500' }, /on/],
    [{ on: 'refund_create', action: 'delay' }, /delayMs/],
    [{ on: 'refund_create', action: 'error_500', times: 0 }, /times/],
    [{ on: 'refund_create', action: 'lock_timeout', share: 0 }, /share/],
    [{ on: 'refund_create', action: 'lock_timeout', share: 1.5 }, /share/],
    [{ on: 'refund_create', action: 'error_500', share: 0.5 }, /share/],
    [{ on: 'refund_create', action: 'lock_timeout', paymentIntent: 'ch_1' }, /paymentIntent/],
    [{ on: 'refund_create', action: 'error_429', paymentIntent: 'pi_1' }, /paymentIntent/],
  ])('setFault refuses a malformed fault %j', async (fault, message) => {
    const sandbox = await useSandbox();
    expect(() => sandbox.setFault(fault as unknown as Fault)).toThrow(message);
  });
});
