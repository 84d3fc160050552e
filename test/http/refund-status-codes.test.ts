import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AppWorld, buildAppWorld } from '../support/app-world.ts';

// An agent polls GET /v1/refunds/:request_id until the answer is final, and 200 means final
// (docs/agents/http-api.md): GET answers 202 while a request is still pending and 200 once it is final, exactly as
// POST does for the same request, or an agent stops polling a refund nobody has decided yet.

let world: AppWorld;
let ana: { cookie: string; csrf: string };
beforeAll(async () => {
  world = await buildAppWorld();
  ana = await world.login('ana');
});
afterAll(async () => world.close());

type Body = { request_id: string; payment_intent: string; amount: number };

/** Post a request over the $50 rule and return its open escalation. */
async function queued(body: Body) {
  const posted = await world.agent('POST', '/v1/refunds', body);
  expect(posted.json().status).toBe('QUEUED');
  const effectId = posted.json().effect_id as string;
  const item = (await world.as(ana, 'GET', `/api/items/${effectId}`)).json();
  return { effectId, escalation: item.item.escalation as string };
}

const STATES: [string, number, string, (body: Body) => Promise<(() => Promise<void>) | undefined>][] = [
  ['queued', 202, 'QUEUED', async (body) => void (await queued({ ...body, amount: 8_000 }))],
  [
    'approved, not sent yet',
    202,
    'APPROVED',
    async (body) => {
      const { effectId, escalation } = await queued({ ...body, amount: 8_000 });
      expect(await world.services.inbox.approve(effectId, 'ana', { seen: escalation, execute: false })).toBe('APPROVED');
      return undefined;
    },
  ],
  [
    'in flight',
    202,
    'IN_FLIGHT',
    async (body) => {
      // The send is held after its DISPATCHED is durable, before Stripe is called.
      let release = () => {};
      const held = new Promise<void>((resolve) => {
        release = resolve;
      });
      world.services.gate.killHook = (point) => (point === 'after_dispatch' ? held : undefined);
      const pending = world.agent('POST', '/v1/refunds', body);
      for (let i = 0; i < 200 && (await world.agent('GET', `/v1/refunds/${body.request_id}`)).json().status !== 'IN_FLIGHT'; i++) {
        await new Promise((r) => setTimeout(r, 10));
      }
      return async () => {
        world.services.gate.killHook = undefined;
        release();
        expect((await pending).statusCode).toBe(200);
      };
    },
  ],
  ['committed', 200, 'COMMITTED', async (body) => void (await world.agent('POST', '/v1/refunds', body))],
  [
    'closed by a rejection',
    200,
    'CLOSED',
    async (body) => {
      const { effectId, escalation } = await queued({ ...body, amount: 8_000 });
      expect(await world.services.inbox.reject(effectId, 'ana', { seen: escalation })).toBe('REJECTED');
      return undefined;
    },
  ],
];

describe('GET /v1/refunds/:request_id answers with the status codes of POST', () => {
  it.each(STATES)('%s: %i', async (state, code, status, setup) => {
    const pi = await world.payment(10_000);
    const id = `codes-${state.replaceAll(/[ ,]+/g, '-')}`;
    const release = await setup({ request_id: id, payment_intent: pi, amount: 2_000 });
    try {
      const current = await world.agent('GET', `/v1/refunds/${id}`);
      expect([current.statusCode, current.json().status]).toEqual([code, status]);
      const body = { request_id: id, payment_intent: pi, amount: state === 'in flight' || state === 'committed' ? 2_000 : 8_000 };
      const resent = await world.agent('POST', '/v1/refunds', body);
      expect(resent.statusCode).toBe(current.statusCode);
    } finally {
      await release?.();
    }
  });
});
