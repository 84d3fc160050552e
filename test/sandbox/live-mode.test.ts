import Stripe from 'stripe';
import { describe, expect, it } from 'vitest';
import { connectSandbox } from '../../server/sandbox/remote.ts';
import { createStripeClient } from '../../server/stripe/client.ts';
import { useSandbox, useWebhookListener } from './support.ts';

const SECRET = 'whsec_sandbox_live_secret';
const LIVE_KEY = 'rk_live_interlock_sandbox_probe';

/** A real SDK client on a live restricted key, pointed at the sandbox. */
function liveClient(url: string): Stripe {
  const { hostname, port } = new URL(url);
  return createStripeClient(LIVE_KEY, { host: hostname, port: Number(port), protocol: 'http' }, { live: true });
}

describe('the sandbox answering as Stripe live mode', () => {
  it('takes live keys only, and answers objects, expansions and events with livemode: true', async () => {
    const listener = await useWebhookListener();
    const sandbox = await useSandbox({ mode: 'live', webhook: { url: listener.url, secret: SECRET } });
    const intent = await sandbox.createPaymentIntent(5000);
    const stripe = liveClient(sandbox.url);
    const read = await stripe.paymentIntents.retrieve(intent.id, { expand: ['latest_charge.refunds'] });
    expect(read.livemode).toBe(true);
    const charge = read.latest_charge as Stripe.Charge;
    expect(charge.livemode).toBe(true);
    const refund = await stripe.refunds.create({ payment_intent: intent.id, amount: 700 });
    expect(refund.object).toBe('refund');
    const [hook] = await listener.waitFor(1);
    const event = Stripe.webhooks.constructEvent(hook!.rawBody, hook!.headers['stripe-signature'] as string, SECRET);
    expect(event).toMatchObject({ type: 'refund.created', livemode: true, api_version: Stripe.API_VERSION });
    const page = await stripe.paymentIntents.list({ limit: 1 });
    expect(page).toMatchObject({ object: 'list', has_more: false, data: [{ id: intent.id, livemode: true }] });
    // A test-mode key is refused by a live sandbox, as a key of the other mode is.
    await expect(sandbox.stripe().paymentIntents.retrieve(intent.id)).rejects.toMatchObject({ statusCode: 401 });
  });

  it('a restricted key without a permission is refused 403 as Stripe refuses it, and counted apart', async () => {
    const sandbox = await useSandbox({ mode: 'live' });
    const remote = connectSandbox(sandbox.url);
    expect(await remote.configure({ deniedPermissions: ['rak_refund_write'] })).toMatchObject({ mode: 'live', deniedPermissions: ['rak_refund_write'] });
    const stripe = liveClient(sandbox.url);
    const refused = stripe.refunds.create({ payment_intent: 'pi_interlock_probe_does_not_exist', amount: 1 });
    await expect(refused).rejects.toBeInstanceOf(Stripe.errors.StripePermissionError);
    await expect(refused).rejects.toMatchObject({ statusCode: 403, type: 'StripePermissionError', rawType: 'invalid_request_error' });
    await expect(refused).rejects.toThrow(
      /^The provided key 'rk_live_\*+robe' does not have the required permissions for this endpoint on account 'acct_interlock_sandbox'\. Having the 'rak_refund_write' permission would allow this request to continue\.$/,
    );
    // The read permissions stay: a missing payment intent is the create's own refusal once allowed.
    expect((await stripe.refunds.list({ limit: 1 })).object).toBe('list');
    await remote.configure({ deniedPermissions: [] });
    await expect(stripe.refunds.create({ payment_intent: 'pi_interlock_probe_does_not_exist', amount: 1 })).rejects.toMatchObject({
      statusCode: 400,
      code: 'resource_missing',
    });
    expect(sandbox.requestCounts().endpoints['POST /v1/refunds']).toEqual({ through: 1, rate_limited: 0, lock_timeout: 0, unauthorized: 0, forbidden: 1 });
  });

  it('refuses a setting outside its closed lists by name', async () => {
    const sandbox = await useSandbox();
    await expect(connectSandbox(sandbox.url).configure({ mode: 'prod' as 'live' })).rejects.toThrow(/mode must be one of test, live/);
    await expect(connectSandbox(sandbox.url).configure({ deniedPermissions: ['rak_everything' as 'rak_refund_write'] })).rejects.toThrow(/deniedPermissions must be a list of/);
  });
});
