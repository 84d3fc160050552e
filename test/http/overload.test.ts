import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { limits } from '../../shared/limits.ts';
import { signWebhook } from '../../server/confirm/signature.ts';
import { AGENT_TOKEN, type AppWorld, buildAppWorld, testConfig, WEBHOOK_SECRET } from '../support/app-world.ts';

// Under overload an agent is told 429 at once, with nothing written, rather than queued behind
// work it would wait seconds for; the same request sent again later goes through. The refusal
// comes before any of the request's work (its token, its body, its route), and people's
// decisions, health probes and Stripe's webhooks are never refused for it. One agent holds at
// most its share of the places, so a flood from one agent leaves room for another.

const OTHER_TOKEN = 'sk_agent_other_bot_for_overload';
/** The demo agent and another, each with a token of its own. */
function twoAgents() {
  const base = testConfig();
  return { ...base, agents: [...base.agents, { name: 'other-bot', tokenSha256: createHash('sha256').update(OTHER_TOKEN).digest('hex') }] };
}

let world: AppWorld;
beforeAll(async () => {
  world = await buildAppWorld({ config: twoAgents(), refundsInFlightMax: 4, refundsWorkingMax: 4 });
});
afterAll(async () => world.close());

/** Refund requests Stripe answers slowly, so each holds its place for `delayMs`; resolves once all are at the send. */
async function holdPlaces(w: AppWorld, tag: string, delayMs: number, tokens: readonly string[]) {
  const payments = await Promise.all(tokens.map(() => w.payment(10_000)));
  w.sandbox.setFault({ on: 'refund_create', action: 'delay', delayMs, times: tokens.length });
  const slow = payments.map((pi, n) => w.agent('POST', '/v1/refunds', { request_id: `${tag}-${n}`, payment_intent: pi, amount: 1_000 }, tokens[n]));
  // Let them all reach the send before anything else arrives.
  await new Promise((resolve) => setTimeout(resolve, 200));
  return slow;
}

/** Every place of the world taken: two by each agent, its share beside the other. */
const EVERY_PLACE = [AGENT_TOKEN, AGENT_TOKEN, OTHER_TOKEN, OTHER_TOKEN];

/** One series' value from Prometheus' text format, or null when the series is absent. */
async function metric(w: AppWorld, series: string): Promise<number | null> {
  const text = (await w.app.inject({ method: 'GET', url: '/metrics' })).body;
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? null : Number(line.slice(series.length + 1));
}

describe('refund requests beyond the in-flight bound', () => {
  it('are answered 429 rate_limited with Retry-After, write nothing, and go through when sent again', async () => {
    const slow = await holdPlaces(world, 'busy', 400, EVERY_PLACE);
    const shedBefore = await metric(world, 'interlock_shed_total{reason="refunds_in_flight"}');
    const pi = await world.payment(10_000);
    const body = { request_id: 'busy-2', payment_intent: pi, amount: 1_000 };
    const before = await world.entryCount();
    expect(world.services.loopPressure.settleChunk()).toBe(Number.POSITIVE_INFINITY);
    const refused = await world.agent('POST', '/v1/refunds', body);
    expect(refused.statusCode).toBe(429);
    expect(refused.headers['retry-after']).toBe('1');
    // While agents are shed, the journal's committed batches settle their callers a few at a time.
    expect(world.services.loopPressure.settleChunk()).toBe(limits.settleChunkWhileShedding);
    expect(refused.json()).toMatchObject({ error: { code: 'rate_limited', message: expect.stringContaining('working on 4 refund requests') } });
    expect(await metric(world, 'interlock_shed_total{reason="refunds_in_flight"}')).toBe((shedBefore ?? Number.NaN) + 1);
    expect(await metric(world, 'interlock_refund_requests_in_flight')).toBe(4);
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
    expect(answered.map((r) => r.json().status)).toEqual(['COMMITTED', 'COMMITTED', 'COMMITTED', 'COMMITTED']);
    expect(await metric(world, 'interlock_refund_requests_in_flight')).toBe(0);
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

describe("an agent's share of the places", () => {
  it('one agent holding its share is told 429 agent_share while another agent still gets through', async () => {
    // Alone, an agent may hold 3 of the 4 places: the fourth is kept for another agent.
    const slow = await holdPlaces(world, 'share', 400, [AGENT_TOKEN, AGENT_TOKEN, AGENT_TOKEN]);
    const [mine, theirs] = await Promise.all([world.payment(10_000), world.payment(10_000)]);
    const refused = await world.agent('POST', '/v1/refunds', { request_id: 'share-mine', payment_intent: mine, amount: 1_000 });
    expect(refused.statusCode).toBe(429);
    expect(refused.headers['retry-after']).toBe('1');
    expect(refused.json().error.message).toContain('this agent holds its share (3) of the 4 refund requests');
    expect(await metric(world, 'interlock_shed_total{reason="agent_share"}')).toBeGreaterThanOrEqual(1);
    const other = await world.agent('POST', '/v1/refunds', { request_id: 'share-theirs', payment_intent: theirs, amount: 1_000 }, OTHER_TOKEN);
    expect(other.json().status).toBe('COMMITTED');
    expect((await Promise.all(slow)).map((r) => r.statusCode)).toEqual([200, 200, 200]);
  });
});

describe('refund requests beyond the places at work', () => {
  it('wait their turn in arrival order rather than being shed, and are answered once a place is free', async () => {
    const narrow = await buildAppWorld({ refundsInFlightMax: 4, refundsWorkingMax: 1 });
    try {
      const [slowPi, nextPi] = await Promise.all([narrow.payment(10_000), narrow.payment(10_000)]);
      narrow.sandbox.setFault({ on: 'refund_create', action: 'delay', delayMs: 400, times: 1 });
      const finished: string[] = [];
      const ask = (id: string, pi: string) =>
        narrow.agent('POST', '/v1/refunds', { request_id: id, payment_intent: pi, amount: 1_000 }).then((r) => {
          finished.push(id);
          return r;
        });
      const slow = ask('turn-0', slowPi);
      await new Promise((resolve) => setTimeout(resolve, 200));
      const next = ask('turn-1', nextPi);
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(await metric(narrow, 'interlock_refund_requests_in_flight')).toBe(2);
      expect(await metric(narrow, 'interlock_refund_requests_working')).toBe(1);
      const answers = await Promise.all([slow, next]);
      expect(answers.map((r) => r.json().status)).toEqual(['COMMITTED', 'COMMITTED']);
      expect(finished).toEqual(['turn-0', 'turn-1']);
      expect(await metric(narrow, 'interlock_refund_requests_working')).toBe(0);
    } finally {
      await narrow.close();
    }
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

    const slow = await holdPlaces(world, 'flood-held', 1_500, EVERY_PLACE);
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
    expect(healthz.json()).toMatchObject({ ok: true });
    expect(decided.statusCode).toBe(200);
    expect(decided.json().status).toBe('REJECTED');
    expect(webhook.statusCode).toBe(200);
    // Nothing of the flood was written: only the person's decision (and what it closes) is new.
    for (let n = 0; n < 100; n++) expect((await world.agent('GET', `/v1/refunds/flood-${n}`)).statusCode).toBe(404);
    expect(await world.entryCount()).toBeGreaterThan(before);

    // The held requests still finish, and then the flood's requests are taken when sent again.
    expect((await Promise.all(slow)).map((r) => r.statusCode)).toEqual([200, 200, 200, 200]);
    const again = await world.agent('POST', '/v1/refunds', { request_id: 'flood-0', payment_intent: pis[0]!, amount: 500 });
    expect([200, 202]).toContain(again.statusCode);
  });
});
