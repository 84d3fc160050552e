import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AppWorld, buildAppWorld } from '../support/app-world.ts';

// Every read of the inbox, the items, the done and closed lists and the scoreboard awaits the
// views' catch-up: what another server wrote to the same journal file is shown at once, with no
// poll (the worlds run no background work) and no route remembering to call catchUp().

let here: AppWorld;
let there: AppWorld;
beforeAll(async () => {
  here = await buildAppWorld();
  there = await buildAppWorld({ dir: here.dir, clock: here.clock, sandbox: here.sandbox });
});
afterAll(async () => {
  await there.close();
  await here.close();
});

/** A refund request that needs a person, made through the other server; its effect id and escalation. */
async function queuedThere(requestId: string): Promise<{ effectId: string; escalation: string }> {
  const pi = await there.payment(50_000);
  const posted = await there.agent('POST', '/v1/refunds', { request_id: requestId, payment_intent: pi, amount: 8_000 });
  expect(posted.json().status).toBe('QUEUED');
  const effectId = posted.json().effect_id as string;
  const ana = await there.login('ana');
  const item = (await there.as(ana, 'GET', `/api/items/${effectId}`)).json().item;
  return { effectId, escalation: item.escalation };
}

describe('views are never behind the journal', () => {
  it('what another server decided is in the done and closed lists, the item and the scoreboard at once', async () => {
    const ana = await here.login('ana');
    const fin = await here.login('fin');
    const boardBefore = (await here.as(fin, 'GET', '/api/scoreboard')).json().board;
    const approved = await queuedThere('never-behind-1');
    const rejected = await queuedThere('never-behind-2');
    const anaThere = await there.login('ana');
    const decide = (effectId: string, action: string, escalation: string) =>
      there.as(anaThere, 'POST', `/api/items/${effectId}/decisions`, { action, escalation, ...(action === 'reject' ? { reason: 'not covered by the return policy' } : {}) });
    expect((await decide(approved.effectId, 'approve', approved.escalation)).json().status).toBe('COMMITTED');
    expect((await decide(rejected.effectId, 'reject', rejected.escalation)).json().status).toBe('REJECTED');

    const ids = (answer: { json(): { items: { effect_id: string }[] } }) => answer.json().items.map((item) => item.effect_id);
    expect(ids(await here.as(ana, 'GET', '/api/done'))).toContain(approved.effectId);
    expect(ids(await here.as(ana, 'GET', '/api/closed'))).toContain(rejected.effectId);
    expect(ids(await here.as(ana, 'GET', '/api/inbox'))).not.toContain(approved.effectId);
    expect((await here.as(ana, 'GET', `/api/items/${approved.effectId}`)).json()).toMatchObject({ state: 'DONE', item: null });
    const board = (await here.as(fin, 'GET', '/api/scoreboard')).json().board;
    expect([board.sent_after_person, board.rejected]).toEqual([boardBefore.sent_after_person + 1, boardBefore.rejected + 1]);
  });

  it('what another server queued is in my inbox at once', async () => {
    const { effectId } = await queuedThere('never-behind-3');
    const ana = await here.login('ana');
    expect((await here.as(ana, 'GET', '/api/inbox')).json().items.map((item: { effect_id: string }) => item.effect_id)).toContain(effectId);
  });
});
