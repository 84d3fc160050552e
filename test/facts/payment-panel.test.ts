import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { PaymentPanel } from '../../shared/api.ts';
import { dashboardUrl, PaymentPanels } from '../../server/facts/payment-panel.ts';
import { PAYMENT_UNREAD } from '../../server/http/item-detail.ts';
import { StripeRefunds } from '../../server/targets/stripe-refunds.ts';
import { type AppWorld, buildAppWorld } from '../support/app-world.ts';
import { useSandbox } from '../sandbox/support.ts';

// The item page's payment panel, read through the stripe SDK from the local sandbox: who paid,
// with which card, when, every refund and who made it, the dispute; kept a minute per item.

const DAY_MS = 86_400_000;

let world: AppWorld;
beforeAll(async () => {
  world = await buildAppWorld();
});
afterAll(async () => world.close());

/** A payment with a named customer and a Mastercard, charged three days ago, refunded once by Interlock and once by hand, then disputed. */
async function busyPayment(tag: string) {
  const chargedAtMs = world.clock.wallMs() - 3 * DAY_MS;
  const intent = await world.sandbox.createPaymentIntent(20_000, 'pm_card_mastercard', {
    customer: { name: 'Ada Lovelace', email: 'ada@example.com' },
    chargedAtMs,
  });
  const routine = await world.agent('POST', '/v1/refunds', { request_id: `${tag}-routine`, payment_intent: intent.id, amount: 1_000 });
  expect(routine.json().status).toBe('COMMITTED');
  world.sandbox.handRefund(intent.id, 2_000);
  const judged = await world.agent('POST', '/v1/refunds', { request_id: `${tag}-judged`, payment_intent: intent.id, amount: 8_000 });
  expect(judged.json().status).toBe('QUEUED');
  const dispute = world.sandbox.openDispute(intent.id);
  return { pi: intent.id, chargedAtMs, effectId: judged.json().effect_id as string, dispute };
}

describe('the payment panel of GET /api/items/:effect_id', () => {
  it('says who paid, with which card, when, every refund with who made it (the request id for Interlock, outside for a hand refund), and the dispute', async () => {
    const { pi, chargedAtMs, effectId, dispute } = await busyPayment('panel');
    // Finance reads every request, so the one the rules cleared is named (an approver is not told it).
    const fin = await world.login('fin');
    const page = (await world.as(fin, 'GET', `/api/items/${effectId}`)).json();
    const routine = world.sandbox.refunds(pi)[0]!;
    const hand = world.sandbox.refunds(pi)[1]!;
    expect(page.payment_error).toBeNull();
    expect(page.payment).toEqual({
      payment_intent: pi,
      amount: 20_000,
      currency: 'usd',
      charged_at_ms: Math.floor(chargedAtMs / 1000) * 1000,
      customer: { name: 'Ada Lovelace', email: 'ada@example.com' },
      card: { brand: 'mastercard', last4: '4444' },
      refunds: [
        { id: routine.id, amount: 1_000, status: 'succeeded', created_ms: routine.created * 1000, by: 'interlock', request_id: 'panel-routine' },
        { id: hand.id, amount: 2_000, status: 'succeeded', created_ms: hand.created * 1000, by: 'outside', request_id: null },
      ],
      // The whole payment disputed, with the week Stripe gives for evidence.
      dispute: { status: 'needs_response', reason: 'general', amount: 20_000, currency: 'usd', due_by_ms: dispute.evidence_details.due_by! * 1000 },
      // The local sandbox has no dashboard.
      dashboard_url: null,
      as_of_ms: expect.any(Number),
    } satisfies PaymentPanel);
    expect(dispute.evidence_details.due_by! * 1000 - world.clock.wallMs()).toBeGreaterThan(6 * DAY_MS);
  });

  it('is read from Stripe once per minute per item: a second open is served from the cache; a webhook naming the payment, or the item moving, reads it again', async () => {
    const { pi, effectId } = await busyPayment('cached');
    const ana = await world.login('ana');
    const disputes = vi.spyOn(world.sandbox.stripe().disputes, 'list');
    const open = async () => (await world.as(ana, 'GET', `/api/items/${effectId}`)).json().payment as PaymentPanel;
    const first = await open();
    expect(await open()).toEqual(first);
    expect(disputes).toHaveBeenCalledTimes(1);
    world.services.onPaymentEvent(pi);
    await open();
    expect(disputes).toHaveBeenCalledTimes(2);
    // A decision moves the item's chain: the answer shows the payment as it is after it.
    const item = (await world.as(ana, 'GET', `/api/items/${effectId}`)).json().item;
    const decided = (await world.as(ana, 'POST', `/api/items/${effectId}/decisions`, { action: 'approve', escalation: item.escalation })).json();
    expect(disputes).toHaveBeenCalledTimes(3);
    expect(decided.item.payment.refunds).toHaveLength(2);
    disputes.mockRestore();
  });

  it('when Stripe cannot be read the page still answers, with payment null and payment_error saying so', async () => {
    const { pi, effectId } = await busyPayment('unread');
    world.services.onPaymentEvent(pi);
    const disputes = vi.spyOn(world.sandbox.stripe().disputes, 'list').mockRejectedValueOnce(new Error('Stripe is down'));
    const ana = await world.login('ana');
    const page = (await world.as(ana, 'GET', `/api/items/${effectId}`)).json();
    disputes.mockRestore();
    expect(page).toMatchObject({ payment: null, payment_error: PAYMENT_UNREAD, facts_now: { payment_intent: pi } });
    // A failed read is not kept: the next open reads again, and succeeds.
    expect((await world.as(ana, 'GET', `/api/items/${effectId}`)).json()).toMatchObject({ payment: { payment_intent: pi }, payment_error: null });
  });
});

describe('PaymentPanels on its own clock', () => {
  it('keeps a panel 60 s, shares one read between two opens at once, links the dashboard in test mode, and forgets on a payment event', async () => {
    const sandbox = await useSandbox();
    const stripe = sandbox.stripe();
    const pi = (await sandbox.createPaymentIntent(5_000, 'pm_card_visa', { customer: null })).id;
    let nowMs = Date.UTC(2026, 5, 1);
    const panels = new PaymentPanels({ stripe, listRefunds: (id) => new StripeRefunds(stripe).listRefunds(id), dashboard: true, wallMs: () => nowMs });
    const retrieve = vi.spyOn(stripe.paymentIntents, 'retrieve');
    const request = { effectId: 'e1', paymentIntent: pi, version: 3, requestIdOf: () => null };
    const [a, b] = await Promise.all([panels.read(request), panels.read(request)]);
    expect(a).toEqual(b);
    expect(a).toMatchObject({ customer: null, card: { brand: 'visa', last4: '4242' }, refunds: [], dispute: null, dashboard_url: dashboardUrl(pi), as_of_ms: nowMs });
    expect(a.dashboard_url).toBe(`https://dashboard.stripe.com/test/payments/${pi}`);
    nowMs += 59_999;
    await panels.read(request);
    expect(retrieve).toHaveBeenCalledTimes(1);
    nowMs += 1;
    await panels.read(request);
    expect(retrieve).toHaveBeenCalledTimes(2);
    await panels.read({ ...request, version: 4 });
    expect(retrieve).toHaveBeenCalledTimes(3);
    panels.forget(pi);
    await panels.read({ ...request, version: 4 });
    expect(retrieve).toHaveBeenCalledTimes(4);
  });
});
