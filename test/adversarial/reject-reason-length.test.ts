import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { limits } from '../../shared/limits.ts';
import { type AppWorld, buildAppWorld } from '../support/app-world.ts';

// The attack (on the contract): a reason of 1 to 500 characters, as the approvers' API page and the inbox count
// them, refused by the server. The page counts characters; the server counted UTF-16 units, so a
// reason of 300 emoji or CJK characters beyond the basic plane (600 units) passed the page and was
// refused with validation_failed, leaving the person unable to reject in their own words.

let world: AppWorld;
beforeAll(async () => {
  world = await buildAppWorld();
});
afterAll(async () => world.close());

async function rejectWith(requestId: string, reason: string) {
  const posted = await world.agent('POST', '/v1/refunds', { request_id: requestId, payment_intent: await world.payment(10_000), amount: 8_000 });
  const effectId = posted.json().effect_id as string;
  const ana = await world.login('ana');
  const item = (await world.as(ana, 'GET', `/api/items/${effectId}`)).json();
  return world.as(ana, 'POST', `/api/items/${effectId}/decisions`, { action: 'reject', escalation: item.item.escalation, reason });
}

describe('a rejection’s reason is counted in characters', () => {
  it('500 characters outside the basic plane are taken, and kept whole', async () => {
    const reason = '𠀀'.repeat(limits.rejectReasonCharsMax);
    const answer = await rejectWith('reason-length-1', reason);
    expect([answer.statusCode, answer.json().status]).toEqual([200, 'REJECTED']);
    expect((await world.agent('GET', '/v1/refunds/reason-length-1')).json().decision.reason).toBe(reason);
  });

  it('501 are refused', async () => {
    const answer = await rejectWith('reason-length-2', '😀'.repeat(limits.rejectReasonCharsMax + 1));
    expect([answer.statusCode, answer.json().error.code]).toEqual([400, 'validation_failed']);
  });
});
