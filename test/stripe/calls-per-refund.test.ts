import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type Sandbox, startSandbox } from '../../server/sandbox/index.ts';
import { type AppWorld, buildAppWorld, testConfig } from '../support/app-world.ts';

// What each kind of refund spends of the account's Stripe operations, counted at the sandbox
// (where Stripe would count them) by class of caller: a routine refund is one read of the payment
// (its charge and refunds expanded) and one create; an approved one is one read when it is asked
// for, then one read and one create at the send. A 429 means "not done": it is tried again under
// the same key, and nobody is told of it.

const PACED = testConfig({ stripe: { mode: 'sandbox', rateLimits: { share: 0.8, globalPerSecond: null, endpointPerSecond: null } } });

let sandbox: Sandbox;
let world: AppWorld;
beforeAll(async () => {
  sandbox = await startSandbox({ rateLimits: 'test', settle: 'at_create' });
  world = await buildAppWorld({ sandbox, config: PACED });
});
afterAll(async () => {
  await world.close();
  await sandbox.close();
});
beforeEach(() => {
  sandbox.configure({ expand: 'honour' });
  sandbox.clearFaults();
});

/** The calls of the request and send classes since `before` (the background readers of the item pages left out). */
function spentSince(before: Record<string, number>): Record<string, number> {
  const spent: Record<string, number> = {};
  for (const [key, n] of Object.entries(world.services.budget.counts.callsByClass)) {
    const delta = n - (before[key] ?? 0);
    if (delta > 0 && !key.startsWith('background')) spent[key] = delta;
  }
  return spent;
}

describe('Stripe calls per refund', () => {
  it('a routine refund is two calls: one read of the payment, one create', async () => {
    const pi = await world.payment(10_000);
    const before = { ...world.services.budget.counts.callsByClass };
    const through = sandbox.requestCounts().total.through;
    const answer = await world.agent('POST', '/v1/refunds', { request_id: 'calls-routine', payment_intent: pi, amount: 2_000 });
    expect(answer.json().status).toBe('COMMITTED');
    expect(spentSince(before)).toEqual({ 'request GET /v1/payment_intents/:id': 1, 'send POST /v1/refunds': 1 });
    expect(sandbox.requestCounts().total.through - through).toBe(2);
  });

  it('an approved refund is one read when asked, then one read and one create at the send', async () => {
    const pi = await world.payment(10_000);
    const before = { ...world.services.budget.counts.callsByClass };
    const queued = (await world.agent('POST', '/v1/refunds', { request_id: 'calls-approved', payment_intent: pi, amount: 8_000 })).json();
    expect(queued.status).toBe('QUEUED');
    expect(spentSince(before)).toEqual({ 'request GET /v1/payment_intents/:id': 1 });
    const ana = await world.login('ana');
    const item = (await world.as(ana, 'GET', `/api/items/${queued.effect_id}`)).json();
    const atSend = { ...world.services.budget.counts.callsByClass };
    const decided = (await world.as(ana, 'POST', `/api/items/${queued.effect_id}/decisions`, { action: 'approve', escalation: item.item.escalation })).json();
    expect(decided.status).toBe('COMMITTED');
    expect(spentSince(atSend)).toEqual({ 'send GET /v1/payment_intents/:id': 1, 'send POST /v1/refunds': 1 });
  });

  it('against a Stripe that ignores expand, the facts are read the long way: the charge and the refunds apart', async () => {
    sandbox.configure({ expand: 'ignore' });
    const pi = await world.payment(10_000);
    sandbox.handRefund(pi, 1_000);
    sandbox.openDispute(pi);
    const before = { ...world.services.budget.counts.callsByClass };
    const answer = (await world.agent('POST', '/v1/refunds', { request_id: 'calls-no-expand', payment_intent: pi, amount: 2_000 })).json();
    // The dispute and the hand refund are seen although nothing was expanded: a person decides.
    expect(answer.status).toBe('QUEUED');
    const item = (await world.services.views.current()).inbox.queue(new Set(['ap-leads'])).find((i) => i.effect_id === answer.effect_id);
    expect(item?.facts).toMatchObject({ disputed: true, refunded_outside: 1_000 });
    expect(spentSince(before)).toEqual({
      'request GET /v1/payment_intents/:id': 1,
      'request GET /v1/charges/:id': 1,
      'request GET /v1/refunds': 1,
    });
  });

  it('a refund create answered 429 lock_timeout is tried again under the same key: one refund, COMMITTED, nobody told', async () => {
    const pi = await world.payment(10_000);
    sandbox.setFault({ on: 'refund_create', action: 'lock_timeout', times: 2 });
    const answer = (await world.agent('POST', '/v1/refunds', { request_id: 'calls-locked', payment_intent: pi, amount: 1_500 })).json();
    expect(answer.status).toBe('COMMITTED');
    expect(sandbox.refunds(pi).map((r) => r.amount)).toEqual([1_500]);
    const chain = await world.services.journal.entries(answer.effect_id);
    expect(chain.map((e) => e.kind)).toEqual(['PROPOSED', 'AUTHORIZED', 'DISPATCHED', 'COMMITTED']);
  });
});
