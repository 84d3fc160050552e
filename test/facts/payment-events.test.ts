import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import type { JsonObject } from '../../shared/json.ts';
import { eventPaymentIntent, webhookRoutes } from '../../server/confirm/webhook-plugin.ts';
import type { StripeEventLike } from '../../server/confirm/signature.ts';
import { buildRefundEvent, committedSteps, deliver, journalWith, NOW_MS, PAYMENT_INTENT, post, SECRET } from '../support/confirm-world.ts';

// The webhook's payment hook: every verified refund, charge or dispute event that names a payment
// intent tells whoever shows the payment, whatever the event came to (recorded or not).

/** The webhook plugin alone, its payment events collected. */
async function hookedWebhookApp(onPaymentEvent: (paymentIntent: string) => void = () => {}) {
  const told: string[] = [];
  const app = Fastify({ logger: false });
  await app.register(webhookRoutes, {
    journal: await journalWith(committedSteps()),
    secrets: [SECRET],
    nowMs: () => NOW_MS,
    onPaymentEvent: (paymentIntent) => {
      told.push(paymentIntent);
      onPaymentEvent(paymentIntent);
    },
  });
  await app.ready();
  return { app, told };
}

const event = (type: string, object: JsonObject): StripeEventLike => ({ id: 'evt_x', object: 'event', type, livemode: false, data: { object } });

describe('the webhook tells of every payment event', () => {
  it.each<[string, StripeEventLike, string | null]>([
    ['a refund by Interlock', event('refund.created', { id: 're_1', payment_intent: 'pi_a' }), 'pi_a'],
    ['a refund by hand (no metadata)', event('refund.updated', { id: 're_2', payment_intent: 'pi_b', metadata: {} }), 'pi_b'],
    ['a charge, its payment expanded', event('charge.refunded', { id: 'ch_1', payment_intent: { id: 'pi_c', object: 'payment_intent' } }), 'pi_c'],
    ['a dispute', event('charge.dispute.created', { id: 'dp_1', charge: 'ch_1', payment_intent: 'pi_d' }), 'pi_d'],
    ['a charge with no payment intent', event('charge.succeeded', { id: 'ch_2', payment_intent: null }), null],
    ['a customer event', event('customer.updated', { id: 'cus_1', payment_intent: 'pi_e' }), null],
    ['a refund naming no payment intent', event('refund.created', { id: 're_3', payment_intent: 'ch_not_a_pi' }), null],
  ])('eventPaymentIntent: %s', (_name, given, expected) => {
    expect(eventPaymentIntent(given)).toBe(expected);
  });

  it('is told for a refund it confirms and for a hand refund it ignores, never for an unverified one', async () => {
    const { app, told } = await hookedWebhookApp();
    const ours = deliver(buildRefundEvent());
    expect((await post(app, ours.body, ours.header)).json()).toEqual({ received: true, result: 'CONFIRMED' });
    const byHand = deliver(buildRefundEvent({ id: 'evt_hand', refund: { id: 're_hand', metadata: {} } }));
    expect((await post(app, byHand.body, byHand.header)).json()).toEqual({ received: true, result: 'IGNORED:unknown_effect' });
    const forged = deliver(buildRefundEvent({ id: 'evt_forged' }), { secret: 'whsec_other' });
    expect((await post(app, forged.body, forged.header)).statusCode).toBe(400);
    expect(told).toEqual([PAYMENT_INTENT, PAYMENT_INTENT]);
  });

  it("a listener's failure is logged, and Stripe is still answered 200", async () => {
    const { app, told } = await hookedWebhookApp(() => {
      throw new Error('display cache broke');
    });
    const ours = deliver(buildRefundEvent());
    const answer = await post(app, ours.body, ours.header);
    expect([answer.statusCode, answer.json()]).toEqual([200, { received: true, result: 'CONFIRMED' }]);
    expect(told).toEqual([PAYMENT_INTENT]);
  });
});
