import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AppWorld, buildAppWorld } from '../support/app-world.ts';

// Under overload an agent is told 429 at once, with nothing written, rather than queued behind
// work it would wait seconds for; the same request sent again later goes through.

let world: AppWorld;
beforeAll(async () => {
  world = await buildAppWorld({ refundsInFlightMax: 2 });
});
afterAll(async () => world.close());

describe('refund requests beyond the in-flight bound', () => {
  it('are answered 429 rate_limited with Retry-After, write nothing, and go through when sent again', async () => {
    const payments = await Promise.all([1, 2, 3].map(() => world.payment(10_000)));
    // Stripe answers the first two sends slowly, so both requests are still being worked on.
    world.sandbox.setFault({ on: 'refund_create', action: 'delay', delayMs: 400, times: 2 });
    const body = (n: number) => ({ request_id: `busy-${n}`, payment_intent: payments[n]!, amount: 1_000 });
    const slow = [world.agent('POST', '/v1/refunds', body(0)), world.agent('POST', '/v1/refunds', body(1))];
    // Let both reach the send before the third arrives.
    await new Promise((resolve) => setTimeout(resolve, 200));
    const before = await world.entryCount();
    const refused = await world.agent('POST', '/v1/refunds', body(2));
    expect(refused.statusCode).toBe(429);
    expect(refused.headers['retry-after']).toBe('1');
    expect(refused.json()).toMatchObject({ error: { code: 'rate_limited' } });
    expect(await world.entryCount()).toBe(before);
    expect((await world.agent('GET', '/v1/refunds/busy-2')).statusCode).toBe(404);

    const answered = await Promise.all(slow);
    expect(answered.map((r) => r.json().status)).toEqual(['COMMITTED', 'COMMITTED']);
    const again = await world.agent('POST', '/v1/refunds', body(2));
    expect(again.json()).toMatchObject({ status: 'COMMITTED' });
    expect(world.sandbox.refunds(payments[2]!)).toHaveLength(1);
  });

  it('a request refused for bad input is not counted against the bound', async () => {
    for (let i = 0; i < 5; i++) {
      const response = await world.agent('POST', '/v1/refunds', { request_id: 'bad', amount: -1 });
      expect(response.json().error.code).toBe('validation_failed');
    }
    const pi = await world.payment(10_000);
    expect((await world.agent('POST', '/v1/refunds', { request_id: 'after-bad', payment_intent: pi, amount: 500 })).json().status).toBe('COMMITTED');
  });
});
