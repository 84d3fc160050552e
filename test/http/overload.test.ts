import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signWebhook } from '../../server/confirm/signature.ts';
import { type AppWorld, buildAppWorld, WEBHOOK_SECRET } from '../support/app-world.ts';

// Under overload an agent is told 429 at once, with nothing written, rather than queued behind
// work it would wait seconds for; the same request sent again later goes through. The refusal
// comes before any of the request's work (its token, its body, its route), and people's
// decisions, health probes and Stripe's webhooks are never refused for it.

let world: AppWorld;
beforeAll(async () => {
  world = await buildAppWorld({ refundsInFlightMax: 2 });
});
afterAll(async () => world.close());

/** Two refund requests Stripe answers slowly, so both hold their place for `delayMs`; resolves once both are at the send. */
async function holdBothPlaces(tag: string, delayMs: number) {
  const payments = await Promise.all([1, 2].map(() => world.payment(10_000)));
  world.sandbox.setFault({ on: 'refund_create', action: 'delay', delayMs, times: 2 });
  const slow = payments.map((pi, n) => world.agent('POST', '/v1/refunds', { request_id: `${tag}-${n}`, payment_intent: pi, amount: 1_000 }));
  // Let both reach the send before anything else arrives.
  await new Promise((resolve) => setTimeout(resolve, 200));
  return slow;
}

describe('refund requests beyond the in-flight bound', () => {
  it('are answered 429 rate_limited with Retry-After, write nothing, and go through when sent again', async () => {
    const slow = await holdBothPlaces('busy', 400);
    const pi = await world.payment(10_000);
    const body = { request_id: 'busy-2', payment_intent: pi, amount: 1_000 };
    const before = await world.entryCount();
    const refused = await world.agent('POST', '/v1/refunds', body);
    expect(refused.statusCode).toBe(429);
    expect(refused.headers['retry-after']).toBe('1');
    expect(refused.json()).toMatchObject({ error: { code: 'rate_limited' } });
    expect(await world.entryCount()).toBe(before);
    // The same route spelled with percent-escapes is the same refund request, and refused alike.
    for (const path of ['/%761/refunds', '/v1/%72efunds']) {
      const escaped = await world.agent('POST', path, body);
      expect(escaped.statusCode, path).toBe(429);
    }
    expect(await world.entryCount()).toBe(before);
    // An agent's read is not a refund request: it is answered while the bound is full.
    expect((await world.agent('GET', '/v1/refunds/busy-2')).statusCode).toBe(404);

    const answered = await Promise.all(slow);
    expect(answered.map((r) => r.json().status)).toEqual(['COMMITTED', 'COMMITTED']);
    const again = await world.agent('POST', '/v1/refunds', body);
    expect(again.json()).toMatchObject({ status: 'COMMITTED' });
    expect(world.sandbox.refunds(pi)).toHaveLength(1);
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

describe('an agent flood', () => {
  it('is shed 429 before any work, while a decision, /healthz and a webhook pass', async () => {
    // An item waiting for a person, and that person's session, before the flood.
    const queuedPi = await world.payment(10_000);
    const queued = (await world.agent('POST', '/v1/refunds', { request_id: 'flood-queued', payment_intent: queuedPi, amount: 8_000 })).json();
    expect(queued.status).toBe('QUEUED');
    const ana = await world.login('ana');
    const item = (await world.as(ana, 'GET', '/api/inbox')).json().items.find((i: { effect_id: string }) => i.effect_id === queued.effect_id);

    const slow = await holdBothPlaces('flood-held', 1_500);
    const before = await world.entryCount();
    const pis = await Promise.all(Array.from({ length: 5 }, () => world.payment(10_000)));
    const flood = Array.from({ length: 100 }, (_, n) => world.agent('POST', '/v1/refunds', { request_id: `flood-${n}`, payment_intent: pis[n % 5]!, amount: 500 }));
    // A wrong token and a body that is not JSON: refused for overload, not for either, since
    // neither was looked at.
    const unread = world.app.inject({ method: 'POST', url: '/v1/refunds', headers: { authorization: 'Bearer not-a-token-at-all', 'content-type': 'application/json' }, payload: '{not json' });

    const event = { id: 'evt_flood_1', object: 'event', type: 'payment_intent.created', livemode: false, created: Math.floor(world.clock.wallMs() / 1000), data: { object: { id: queuedPi } } };
    const webhookBody = JSON.stringify(event);
    const [healthz, decided, webhook] = await Promise.all([
      world.app.inject({ method: 'GET', url: '/healthz' }),
      world.as(ana, 'POST', `/api/items/${queued.effect_id}/decisions`, { action: 'reject', escalation: item.escalation, reason: 'not during a flood' }),
      world.app.inject({
        method: 'POST',
        url: '/webhooks/stripe',
        headers: { 'content-type': 'application/json', 'stripe-signature': signWebhook(webhookBody, WEBHOOK_SECRET, Math.floor(world.clock.wallMs() / 1000)) },
        payload: webhookBody,
      }),
    ]);
    const shed = await Promise.all([...flood, unread]);

    for (const answer of shed) {
      expect(answer.statusCode).toBe(429);
      expect(answer.headers['retry-after']).toBe('1');
      expect(answer.json()).toMatchObject({ error: { code: 'rate_limited' } });
    }
    expect(healthz.json()).toEqual({ ok: true });
    expect(decided.statusCode).toBe(200);
    expect(decided.json().status).toBe('REJECTED');
    expect(webhook.statusCode).toBe(200);
    // Nothing of the flood was written: only the person's decision (and what it closes) is new.
    for (let n = 0; n < 100; n++) expect((await world.agent('GET', `/v1/refunds/flood-${n}`)).statusCode).toBe(404);
    expect(await world.entryCount()).toBeGreaterThan(before);

    // The held requests still finish, and then the flood's requests are taken when sent again.
    expect((await Promise.all(slow)).map((r) => r.statusCode)).toEqual([200, 200]);
    const again = await world.agent('POST', '/v1/refunds', { request_id: 'flood-0', payment_intent: pis[0]!, amount: 500 });
    expect([200, 202]).toContain(again.statusCode);
  });
});
