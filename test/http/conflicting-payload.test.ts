import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AppWorld, buildAppWorld } from '../support/app-world.ts';

// The same request id is the same decision forever (docs/agents/http-api.md): a re-send with the same payload
// answers the current status, and one with any other payload is refused 409 with both payloads,
// nothing written and nothing sent, whatever state the first request is in. This is how Stripe
// answers an idempotency key reused with other parameters; answering the old decision instead
// would let an agent believe a refund happened that it never asked for.

let world: AppWorld;
let ana: { cookie: string; csrf: string };
beforeAll(async () => {
  world = await buildAppWorld();
  ana = await world.login('ana');
});
afterAll(async () => world.close());

type Body = { request_id: string; payment_intent: string; amount: number; reason?: string; flags?: string[] };

const post = (body: Body) => world.agent('POST', '/v1/refunds', body);

/** Everything the conflicting request must leave as it was, read through every door. */
async function snapshot(effectId: string) {
  const item = await world.as(ana, 'GET', `/api/items/${effectId}`);
  const summary = await (await world.services.views.current()).inbox.summary(effectId);
  return {
    entries: await world.services.journal.entries(effectId),
    count: await world.entryCount(),
    receipt: (await world.agent('GET', `/v1/receipts/${effectId}`)).body,
    item: [item.statusCode, item.body],
    summary: summary === undefined ? undefined : structuredClone(summary),
    refunds: world.sandbox.refunds(),
  };
}

/** The exact 409 body: the recorded and offered payloads, normalised. */
function conflict(recorded: object, offered: object) {
  return {
    error: { code: 'conflicting_payload', message: expect.any(String) },
    status: 'REFUSED:conflicting_payload',
    recorded,
    offered,
  };
}

describe('a request id reused with the same payload, once normalised', () => {
  it.each([
    ['flags in another order', { flags: ['a', 'b'] }, { flags: ['b', 'a'] }],
    ['a repeated flag', { flags: ['a', 'b'] }, { flags: ['b', 'a', 'b'] }],
    ['no flags and an empty list', {}, { flags: [] }],
  ])('%s is the same payload: the current status, nothing written', async (_name, first, again) => {
    const pi = await world.payment(10_000);
    const id = `same-${_name.replaceAll(' ', '-')}`;
    const queued = await post({ request_id: id, payment_intent: pi, amount: 8_000, ...first });
    expect([queued.statusCode, queued.json().status]).toEqual([202, 'QUEUED']);
    const routine = await post({ request_id: `${id}-routine`, payment_intent: pi, amount: 1_000, ...first });
    expect([routine.statusCode, routine.json().status]).toEqual([200, 'COMMITTED']);
    const before = await world.entryCount();
    const queuedAgain = await post({ request_id: id, payment_intent: pi, amount: 8_000, ...again });
    expect([queuedAgain.statusCode, queuedAgain.json().status, queuedAgain.json().effect_id]).toEqual([202, 'QUEUED', queued.json().effect_id]);
    const routineAgain = await post({ request_id: `${id}-routine`, payment_intent: pi, amount: 1_000, ...again });
    expect([routineAgain.statusCode, routineAgain.json().status, routineAgain.json().refund]).toEqual([200, 'DUPLICATE_IGNORED', routine.json().refund]);
    expect(await world.entryCount()).toBe(before);
    expect(world.sandbox.refunds(pi)).toHaveLength(1);
  });
});

describe('a missing reason is not an empty one', () => {
  it.each([
    ['first missing, then empty', {}, { reason: '' }],
    ['first empty, then missing', { reason: '' }, {}],
  ])('%s: 409 conflicting_payload, nothing written', async (_name, first, second) => {
    const pi = await world.payment(10_000);
    const id = `reason-${_name.replaceAll(/[ ,]+/g, '-')}`;
    const posted = await post({ request_id: id, payment_intent: pi, amount: 8_000, ...first });
    expect(posted.json().status).toBe('QUEUED');
    const before = await snapshot(posted.json().effect_id);
    const refused = await post({ request_id: id, payment_intent: pi, amount: 8_000, ...second });
    expect(refused.statusCode).toBe(409);
    expect(refused.json()).toStrictEqual(
      conflict({ payment_intent: pi, amount: 8_000, ...first, flags: [] }, { payment_intent: pi, amount: 8_000, ...second, flags: [] }),
    );
    expect(await snapshot(posted.json().effect_id)).toEqual(before);
  });

  it('the journal binds the request without a reason when the agent sent none', async () => {
    const pi = await world.payment(10_000);
    const posted = (await post({ request_id: 'reason-absent-bound', payment_intent: pi, amount: 8_000 })).json();
    const first = (await world.services.journal.entries(posted.effect_id)).find((e) => e.kind === 'PROPOSED');
    expect(first?.request).toStrictEqual({ id: 'reason-absent-bound', agent: 'support-bot', payment_intent: pi, amount: 8_000, flags: [] });
  });
});

/** Bring a request id into one chain state; returns its effect id and the payload it was made with. */
type Setup = (id: string, pi: string) => Promise<{ effectId: string; body: Body; release?: () => Promise<void> }>;

async function queuedRequest(id: string, pi: string) {
  const body = { request_id: id, payment_intent: pi, amount: 8_000, reason: 'box arrived empty' };
  const posted = await post(body);
  expect([posted.statusCode, posted.json().status]).toEqual([202, 'QUEUED']);
  const effectId = posted.json().effect_id as string;
  const item = (await world.as(ana, 'GET', `/api/items/${effectId}`)).json();
  return { effectId, body, escalation: item.item.escalation as string };
}

const STATES: [string, Setup, (body: Body) => Body][] = [
  ['queued', async (id, pi) => queuedRequest(id, pi), (b) => ({ ...b, amount: 8_100 })],
  [
    'approved, not sent yet',
    async (id, pi) => {
      const { effectId, body, escalation } = await queuedRequest(id, pi);
      expect(await world.services.inbox.approve(effectId, 'ana', { seen: escalation, execute: false })).toBe('APPROVED');
      return { effectId, body };
    },
    (b) => ({ ...b, amount: 7_000 }),
  ],
  [
    'in flight',
    async (id, pi) => {
      // The send hangs after its DISPATCHED is durable, before Stripe is called: an open dispatch.
      let release = () => {};
      const hanging = new Promise<void>((resolve) => {
        release = resolve;
      });
      world.services.gate.killHook = (point) => (point === 'after_dispatch' ? hanging : undefined);
      const body = { request_id: id, payment_intent: pi, amount: 2_000 };
      const pending = post(body);
      const effectId = world.services.inbox.effectIdOf({ id, agent: 'support-bot', payment_intent: pi, amount: 2_000 });
      for (let i = 0; i < 200 && !(await world.services.journal.entries(effectId)).some((e) => e.kind === 'DISPATCHED'); i++) {
        await new Promise((r) => setTimeout(r, 10));
      }
      expect((await world.agent('GET', `/v1/refunds/${id}`)).json().status).toBe('IN_FLIGHT');
      return {
        effectId,
        body,
        release: async () => {
          world.services.gate.killHook = undefined;
          release();
          // The first request finishes as it was asked, untouched by the conflicting one.
          expect((await pending).json()).toMatchObject({ status: 'COMMITTED' });
          expect(world.sandbox.refunds(pi).map((r) => r.amount)).toEqual([2_000]);
        },
      };
    },
    (b) => ({ ...b, amount: 2_100 }),
  ],
  [
    'committed',
    async (id, pi) => {
      const body = { request_id: id, payment_intent: pi, amount: 2_000, flags: ['gift'] };
      const posted = await post(body);
      expect(posted.json().status).toBe('COMMITTED');
      return { effectId: posted.json().effect_id, body };
    },
    (b) => ({ ...b, amount: 2_500 }),
  ],
  [
    'closed by a rejection',
    async (id, pi) => {
      const { effectId, body, escalation } = await queuedRequest(id, pi);
      expect(await world.services.inbox.reject(effectId, 'ana', { seen: escalation })).toBe('REJECTED');
      return { effectId, body };
    },
    (b) => ({ ...b, reason: 'box arrived crushed' }),
  ],
];

describe('a request id reused with another payload', () => {
  it.each(STATES)('%s: 409 with both payloads; the chain, receipt, item and Stripe are unchanged', async (state, setup, change) => {
    const pi = await world.payment(10_000);
    const id = `conflict-${state.replaceAll(/[ ,]+/g, '-')}`;
    const { effectId, body, release } = await setup(id, pi);
    try {
      const answerBefore = (await world.agent('GET', `/v1/refunds/${id}`)).json();
      const before = await snapshot(effectId);
      const offered = change(body);
      const refused = await post(offered);
      expect(refused.statusCode).toBe(409);
      const { request_id: _r, ...recordedPayload } = body;
      const { request_id: _o, ...offeredPayload } = offered;
      expect(refused.json()).toStrictEqual(conflict({ flags: [], ...recordedPayload }, { flags: [], ...offeredPayload }));
      expect(await snapshot(effectId)).toEqual(before);
      // The first request is still what it was, and its own re-send still answers it.
      expect((await world.agent('GET', `/v1/refunds/${id}`)).json()).toEqual(answerBefore);
      const resent = await post(body);
      expect(resent.json()).toMatchObject({ effect_id: effectId });
      expect(resent.statusCode).not.toBe(409);
    } finally {
      await release?.();
    }
  });
});
