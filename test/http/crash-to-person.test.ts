import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signWebhook } from '../../server/confirm/signature.ts';
import { SimulatedCrash } from '../../server/gate/target.ts';
import { EFFECT_METADATA_KEY } from '../../server/targets/stripe-refunds.ts';
import { AGENT_TOKEN, type AppWorld, buildAppWorld, DEMO_PASSWORD, WEBHOOK_SECRET } from '../support/app-world.ts';

// End to end through the whole app (seed: test_escalation_flow.py test_crash_to_person_then_webhook_confirmation).
//
// The simplest crash that must go to a person on a tier-1 target like Stripe: the process dies
// after DISPATCHED is durable and before the refund call, and a refund is made by hand while it
// is down. Stripe has no refund under the effect's key, so a blind resend would be safe for the
// key but not for the money: recovery rechecks the facts, finds them changed, looks the refund up,
// finds nothing, and refuses (stale_premise_at_recovery), which routes to payments-ops. (A crash
// after Stripe committed, e.g. drop_after_commit, is settled by the lookup with no person.)
// The restart is a second app on the same journal file, data folder and sandbox; the first one is
// never touched again. The webhook is what Stripe would post for the refund the approval sent.

let world: AppWorld;
let restarted: AppWorld | null = null;
beforeAll(async () => {
  world = await buildAppWorld();
});
afterAll(async () => {
  await restarted?.close();
  await world.close();
});

/** A new process on the same journal, data folder and Stripe: it runs the start-up recovery of services.ts. */
async function restart(): Promise<AppWorld> {
  return buildAppWorld({ dir: world.dir, clock: world.clock, sandbox: world.sandbox });
}

async function login(app: FastifyInstance, name: string) {
  const response = await app.inject({ method: 'POST', url: '/api/session', payload: { name, password: DEMO_PASSWORD } });
  expect(response.statusCode).toBe(200);
  return { cookie: String(response.headers['set-cookie']).split(';')[0]!, csrf: response.json().csrf_token as string };
}

describe('a crash goes to a person, the person approves, Stripe confirms by webhook', () => {
  it('crash before the send + hand refund during the outage → payments-ops approves → signed webhook → the receipt verifies, confirmed by the target', async () => {
    const pi = await world.payment(10_000);
    // 1. The agent's routine refund is cleared by policy; the process dies right after DISPATCHED.
    world.services.gate.killHook = (point) => {
      if (point === 'after_dispatch') throw new SimulatedCrash('the process died before the refund call');
    };
    const posted = await world.agent('POST', '/v1/refunds', { request_id: 'crash-1', payment_intent: pi, amount: 2_000 });
    expect([posted.statusCode, posted.json().status]).toEqual([202, 'IN_FLIGHT']);
    const effectId = posted.json().effect_id as string;
    expect(world.sandbox.refunds(pi)).toEqual([]);

    // 2. While it is down, support refunds 3,000 by hand in the dashboard.
    world.sandbox.handRefund(pi, 3_000);

    // 3. The restart's recovery refuses to resend on changed facts and puts it in front of payments ops.
    restarted = await restart();
    const { app, services } = restarted;
    expect(world.sandbox.refunds(pi).map((r) => r.amount)).toEqual([3_000]);
    const ops = await login(app, 'ops');
    const as = (method: 'GET' | 'POST', url: string, payload?: object) =>
      app.inject({ method, url, headers: { cookie: ops.cookie, 'x-csrf-token': ops.csrf }, ...(payload ? { payload } : {}) });
    const item = (await as('GET', '/api/inbox')).json().items.find((i: { effect_id: string }) => i.effect_id === effectId);
    expect(item).toMatchObject({
      group: 'payments-ops',
      reason: 'stale_premise_at_recovery',
      detail: 'REFUSED:stale_premise_at_recovery',
      changes: [
        { field: 'refunded_by_others', was: 0, now: 3_000 },
        { field: 'refunded_outside', was: 0, now: 3_000 },
      ],
      repairs: [{ code: 'still_fits' }],
    });

    // 4. Ops looks at Stripe, sees 2,000 still fits, and approves: sent once under ops's approval.
    const decided = await as('POST', `/api/items/${effectId}/decisions`, { action: 'approve', escalation: item.escalation });
    expect(decided.json().status).toBe('COMMITTED');
    const ours = world.sandbox.refunds(pi).filter((r) => r.metadata?.[EFFECT_METADATA_KEY] === effectId);
    expect(ours.map((r) => r.amount)).toEqual([2_000]);

    // 5. Stripe posts refund.updated (succeeded), signed with the endpoint secret.
    const refund = (await world.sandbox.stripe().refunds.retrieve(ours[0]!.id)) as unknown as Record<string, unknown>;
    const { lastResponse: _response, ...object } = refund;
    expect(object.status).toBe('succeeded');
    const event = { id: 'evt_crash_1', object: 'event', type: 'refund.updated', livemode: false, created: Math.floor(world.clock.wallMs() / 1000), data: { object } };
    const body = JSON.stringify(event, null, 2);
    const signature = signWebhook(body, WEBHOOK_SECRET, Math.floor(world.clock.wallMs() / 1000));
    const delivered = await app.inject({ method: 'POST', url: '/webhooks/stripe', headers: { 'content-type': 'application/json', 'stripe-signature': signature }, payload: body });
    expect([delivered.statusCode, delivered.json()]).toEqual([200, { received: true, result: 'CONFIRMED' }]);

    // 6. The agent's receipt verifies, signed, approved by ops, sent once, confirmed by Stripe.
    const agent = { authorization: `Bearer ${AGENT_TOKEN}` };
    expect((await app.inject({ method: 'GET', url: '/v1/refunds/crash-1', headers: agent })).json()).toMatchObject({ status: 'COMMITTED', refund: ours[0]!.id });
    const report = (await app.inject({ method: 'GET', url: `/v1/receipts/${effectId}/verify`, headers: agent })).json();
    expect(report).toMatchObject({
      valid: true,
      signed: true,
      happened: true,
      happened_once: true,
      approved_by: 'ops',
      approval_verified: true,
      confirmed_by_target: true,
      escalations: [{ reason: 'stale_premise_at_recovery', group: 'payments-ops', decision: { by: 'ops', decision: 'approve' } }],
    });
    expect(report.problems).toEqual([]);
    expect(await (await services.views.current()).scoreboard.board()).toMatchObject({ crash_to_person: 1, sent_after_person: 1, confirmed_by_target: 1 });
  });
});
