import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AppWorld, buildAppWorld } from '../support/app-world.ts';

// The attack: a refund on a yen payment whose repair the agent, the approver and finance read as
// dollars. On a ¥10,000 payment with ¥3,000 refunded by hand, an approval of ¥8,000 was refused
// with the repair "Refund $70.00, what is left of $100.00", and the agent, once the repair was
// accepted, was told "a refund of $70.00": yen written as cents of a dollar, a hundredfold off
// and in the wrong currency.

let world: AppWorld;

beforeAll(async () => {
  world = await buildAppWorld();
});
afterAll(async () => world.close());

describe('a repair on a zero-decimal currency', () => {
  it('names its amounts in that currency, to the person and to the agent', async () => {
    const intent = await world.sandbox.stripe().paymentIntents.create({ amount: 10_000, currency: 'jpy', payment_method: 'pm_card_visa', confirm: true });
    world.sandbox.handRefund(intent.id, 3_000);
    const posted = await world.agent('POST', '/v1/refunds', { request_id: 'yen-1', payment_intent: intent.id, amount: 8_000 });
    expect(posted.json().status).toBe('QUEUED');
    const effectId = posted.json().effect_id as string;
    const ana = await world.login('ana');
    const item = (await world.as(ana, 'GET', `/api/items/${effectId}`)).json().item;
    const answer = (await world.as(ana, 'POST', `/api/items/${effectId}/decisions`, { action: 'approve', escalation: item.escalation })).json();
    expect(answer.status).toBe('REFUSED:stale_premise');
    const repairs = (answer.item.item.repairs as { why: string }[]).map((repair) => repair.why);
    expect(repairs).toEqual(['Refund ¥7,000, what is left of ¥10,000']);
    const repaired = (await world.as(ana, 'POST', `/api/items/${effectId}/decisions`, { action: 'repair', escalation: answer.item.item.escalation, repair_index: 0 })).json();
    expect(repaired.status).toBe('COMMITTED');
    const told = (await world.agent('GET', '/v1/refunds/yen-1')).json();
    expect(told.why).toContain('a refund of ¥7,000');
    expect(told.why).not.toContain('$');
  });
});
