import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AppWorld, buildAppWorld } from '../support/app-world.ts';

let world: AppWorld;
beforeAll(async () => {
  world = await buildAppWorld();
});
afterAll(async () => world.close());

describe('a person approves more than is left to refund', () => {
  it('is refused before anything is sent, with the repair to refund what is left, even when the facts have not moved since the item was shown', async () => {
    const pi = await world.payment(10_000);
    world.sandbox.handRefund(pi, 3_000);
    const posted = await world.agent('POST', '/v1/refunds', { request_id: 'over-1', payment_intent: pi, amount: 8_000 });
    expect(posted.json().status).toBe('QUEUED');
    const effectId = posted.json().effect_id as string;
    const ana = await world.login('ana');
    const item = (await world.as(ana, 'GET', `/api/items/${effectId}`)).json().item;
    expect(item.facts).toMatchObject({ amount_received: 10_000, refunded_by_others: 3_000 });
    const before = (await world.services.journal.entries(effectId)).length;
    const answer = (await world.as(ana, 'POST', `/api/items/${effectId}/decisions`, { action: 'approve', escalation: item.escalation })).json();
    expect(answer.status).toBe('REFUSED:stale_premise');
    expect(answer.item.item).toMatchObject({ reason: 'stale_premise', repairs: [{ code: 'refund_remaining', set: { amount: 7_000 } }] });
    const written = (await world.services.journal.entries(effectId)).slice(before).map((e) => e.kind);
    expect(written).not.toContain('DISPATCHED');
    expect(world.sandbox.refunds(pi).map((r) => r.amount)).toEqual([3_000]);
    const repaired = (await world.as(ana, 'POST', `/api/items/${effectId}/decisions`, { action: 'repair', escalation: answer.item.item.escalation, repair_index: 0 })).json();
    expect(repaired.status).toBe('COMMITTED');
    expect(world.sandbox.refunds(pi).map((r) => r.amount).sort()).toEqual([3_000, 7_000]);
  });
});
