import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AppWorld, buildAppWorld } from '../support/app-world.ts';

// POST /v1/refunds may name the currency the agent worked the amount out in. It is checked against
// the payment's own currency, which is known only once the payment is read from Stripe (or from
// the facts the request id was bound on): a currency that is not the payment's is refused
// 422 currency_mismatch, with nothing written and nothing sent, since an amount worked out in
// another currency is the wrong amount. It is no part of the bound payload: the same request id
// with or without it is the same decision.

let world: AppWorld;
beforeAll(async () => {
  world = await buildAppWorld();
});
afterAll(async () => world.close());

async function yenPayment(amount = 10_000): Promise<string> {
  return (await world.sandbox.stripe().paymentIntents.create({ amount, currency: 'jpy', payment_method: 'pm_card_visa', confirm: true })).id;
}

describe('a refund request that names its currency', () => {
  it("the payment's currency: asked as any request, and answered with the payment's currency", async () => {
    const pi = await yenPayment();
    const answer = await world.agent('POST', '/v1/refunds', { request_id: 'cur-1', payment_intent: pi, amount: 5_000, currency: 'jpy' });
    expect([answer.statusCode, answer.json().status, answer.json().currency]).toEqual([200, 'COMMITTED', 'jpy']);
    expect(world.sandbox.refunds(pi).map((r) => r.amount)).toEqual([5_000]);
  });

  it('another currency: 422 currency_mismatch naming both, and nothing is written or sent', async () => {
    const pi = await yenPayment();
    const before = await world.entryCount();
    const answer = await world.agent('POST', '/v1/refunds', { request_id: 'cur-2', payment_intent: pi, amount: 2_000, currency: 'usd' });
    expect(answer.statusCode).toBe(422);
    expect(answer.json()).toEqual({
      error: {
        code: 'currency_mismatch',
        message: `currency: the request says usd, but payment ${pi} is in jpy (amount is in its smallest unit: 2000 is ¥2,000); nothing was written or sent`,
      },
    });
    expect(await world.entryCount()).toBe(before);
    expect(world.sandbox.refunds(pi)).toEqual([]);
    expect((await world.agent('GET', '/v1/refunds/cur-2')).statusCode).toBe(404);
  });

  it('a currency in capitals is the same currency', async () => {
    const pi = await yenPayment();
    const answer = await world.agent('POST', '/v1/refunds', { request_id: 'cur-3', payment_intent: pi, amount: 1_000, currency: 'JPY' });
    expect([answer.statusCode, answer.json().status]).toEqual([200, 'COMMITTED']);
  });

  it('the same request id with and without its currency is the same decision; with another currency it is refused, and nothing is written', async () => {
    const pi = await yenPayment();
    const first = await world.agent('POST', '/v1/refunds', { request_id: 'cur-4', payment_intent: pi, amount: 8_000 });
    expect([first.statusCode, first.json().status]).toEqual([202, 'QUEUED']);
    const before = await world.entryCount();
    const withIt = await world.agent('POST', '/v1/refunds', { request_id: 'cur-4', payment_intent: pi, amount: 8_000, currency: 'jpy' });
    expect([withIt.statusCode, withIt.json().status, withIt.json().effect_id]).toEqual([202, 'QUEUED', first.json().effect_id]);
    const wrong = await world.agent('POST', '/v1/refunds', { request_id: 'cur-4', payment_intent: pi, amount: 8_000, currency: 'eur' });
    expect([wrong.statusCode, wrong.json().error.code]).toEqual([422, 'currency_mismatch']);
    expect(await world.entryCount()).toBe(before);
    expect(world.sandbox.refunds(pi)).toEqual([]);
  });

  it('a currency that is not three letters is 400 validation_failed naming the field', async () => {
    const answer = await world.agent('POST', '/v1/refunds', { request_id: 'cur-5', payment_intent: 'pi_abc', amount: 1_000, currency: 'yens' });
    expect(answer.statusCode).toBe(400);
    expect(answer.json().error).toMatchObject({ code: 'validation_failed', message: expect.stringMatching(/^currency: /) });
  });

  it('the answer names the payment currency its amounts are in, also to GET', async () => {
    const pi = await world.payment(10_000);
    await world.agent('POST', '/v1/refunds', { request_id: 'cur-6', payment_intent: pi, amount: 1_000 });
    expect((await world.agent('GET', '/v1/refunds/cur-6')).json().currency).toBe('usd');
  });
});
