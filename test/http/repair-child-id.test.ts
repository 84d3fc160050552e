import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AppWorld, buildAppWorld } from '../support/app-world.ts';

// An agent can read its own receipt, so it knows the hash of the escalation a repair will be
// accepted on, and therefore the repair child's request id `<rid>:repair:<hash8>`. That id is a
// legal agent request id, and the child's effect id is derived from {agent, request_id} exactly
// like an agent's own request. Submitting it first binds the child's chain to the agent's payload.

let world: AppWorld;
beforeAll(async () => {
  world = await buildAppWorld();
});
afterAll(async () => world.close());

describe('repair children cannot be squatted by an agent', () => {
  it("a person's approval authorises only what they saw: accepting a repair must not approve a payload the agent bound under the child's id", async () => {
    const pi = await world.payment(10_000);
    const posted = await world.agent('POST', '/v1/refunds', { request_id: 'rc-1', payment_intent: pi, amount: 8_000 });
    expect(posted.json().status).toBe('QUEUED');
    const effectId = posted.json().effect_id as string;

    // A hand refund, then ana's approval is refused as stale and the item comes back with a repair.
    world.sandbox.handRefund(pi, 3_000);
    const ana = await world.login('ana');
    const first = (await world.as(ana, 'GET', `/api/items/${effectId}`)).json();
    const stale = (await world.as(ana, 'POST', `/api/items/${effectId}/decisions`, { action: 'approve', escalation: first.item.escalation })).json();
    expect(stale.status).toBe('REFUSED:stale_premise');
    const shown = stale.item.item;
    expect(shown.repairs).toMatchObject([{ code: 'refund_remaining', set: { amount: 7_000 } }]);

    // The agent reads its own receipt and learns the escalation hash ana is looking at.
    const receipt = (await world.agent('GET', `/v1/receipts/${effectId}`)).json();
    const escalation = receipt.entries.findLast((e: { kind: string }) => e.kind === 'ESCALATED');
    expect(escalation.hash).toBe(shown.escalation);

    // It binds the repair child's id first: another payment, another amount (needs a person, so it queues).
    const other = await world.payment(10_000);
    const squat = await world.agent('POST', '/v1/refunds', {
      request_id: `rc-1:repair:${String(escalation.hash).slice(0, 8)}`,
      payment_intent: other,
      amount: 9_000,
    });
    expect(squat.json().status).toBe('QUEUED');

    // ana accepts the suggested repair she sees: 7,000 cents back on `pi`.
    const repaired = (await world.as(ana, 'POST', `/api/items/${effectId}/decisions`, { action: 'repair', escalation: shown.escalation, repair_index: 0 })).json();

    // What ana saw and accepted is what is sent: 7,000 on pi. The agent's request under the same id
    // is another decision under another effect id, still waiting for a person.
    expect(repaired.status).toBe('COMMITTED');
    expect(world.sandbox.refunds(other).map((r) => r.amount)).toEqual([]);
    expect(world.sandbox.refunds(pi).map((r) => r.amount).sort()).toEqual([3_000, 7_000]);
    expect(squat.json().effect_id).not.toBe(repaired.item.effect_id);
    const again = await world.agent('GET', `/v1/refunds/${encodeURIComponent(`rc-1:repair:${String(escalation.hash).slice(0, 8)}`)}`);
    expect(again.json().status).toBe('QUEUED');
  });
});
