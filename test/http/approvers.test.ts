import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { type AppWorld, buildAppWorld } from '../support/app-world.ts';

let world: AppWorld;
beforeAll(async () => {
  world = await buildAppWorld();
});
afterAll(async () => world.close());

async function queued(requestId: string, amountCents = 8_000, paymentCents = 10_000) {
  const pi = await world.payment(paymentCents);
  const posted = await world.agent('POST', '/v1/refunds', { request_id: requestId, payment_intent: pi, amount: amountCents });
  expect(posted.json().status).toBe('QUEUED');
  return { pi, effectId: posted.json().effect_id as string };
}

describe('approvers API', () => {
  it('logs in with the right password only, and the cookie is HttpOnly and SameSite=Strict', async () => {
    // From another address: a failure makes the next try from the same one wait a second (login-throttle.test.ts).
    const wrong = await world.app.inject({ method: 'POST', url: '/api/session', remoteAddress: '192.0.2.50', payload: { name: 'ana', password: 'nope' } });
    expect([wrong.statusCode, wrong.json().error.code]).toEqual([401, 'unauthorized']);
    const ok = await world.app.inject({ method: 'POST', url: '/api/session', payload: { name: 'ana', password: 'interlock-demo' } });
    expect(ok.statusCode).toBe(200);
    expect(String(ok.headers['set-cookie'])).toMatch(/HttpOnly/);
    expect(String(ok.headers['set-cookie'])).toMatch(/SameSite=Strict/);
    expect(ok.json()).toMatchObject({ name: 'ana', role: 'approver', groups: ['ap-leads'] });
  });

  it('the inbox shows my groups only; the item shows the facts; approving sends once', async () => {
    const { pi, effectId } = await queued('ap-1');
    const ana = await world.login('ana');
    const inbox = (await world.as(ana, 'GET', '/api/inbox')).json();
    const item = inbox.items.find((i: { effect_id: string }) => i.effect_id === effectId);
    expect(item).toMatchObject({
      group: 'ap-leads',
      reason: 'needs_judgment',
      why: 'over $50.00',
      detail: ["amount within its currency's limit"],
      failed_rules: [{ rule: "amount within its currency's limit", words: 'over $50.00' }],
    });
    const cy = await world.login('cy');
    expect((await world.as(cy, 'GET', '/api/inbox')).json().items.some((i: { effect_id: string }) => i.effect_id === effectId)).toBe(false);
    expect((await world.as(cy, 'GET', `/api/items/${effectId}`)).statusCode).toBe(404);
    const detail = (await world.as(ana, 'GET', `/api/items/${effectId}`)).json();
    expect(detail).toMatchObject({ state: 'ESCALATED', may_decide: true, facts_then: { payment_intent: pi, refunded_by_others: 0 }, changes: [] });
    const decided = await world.as(ana, 'POST', `/api/items/${effectId}/decisions`, { action: 'approve', escalation: item.escalation });
    expect(decided.json()).toMatchObject({ status: 'COMMITTED', item: { state: 'DONE' } });
    expect(world.sandbox.refunds(pi)).toHaveLength(1);
    const again = await world.as(ana, 'POST', `/api/items/${effectId}/decisions`, { action: 'approve', escalation: item.escalation });
    expect(again.json().status).toBe('ALREADY_DECIDED');
    expect(world.sandbox.refunds(pi)).toHaveLength(1);
    const done = (await world.as(ana, 'GET', '/api/done?q=ap-1')).json().items;
    expect(done).toMatchObject([{ effect_id: effectId, decided_by: 'ana' }]);
  });

  it('a hand refund before the decision: approving is refused as stale, then the remaining amount is sent once', async () => {
    const { pi, effectId } = await queued('ap-2', 8_000, 10_000);
    world.sandbox.handRefund(pi, 3_000);
    const ana = await world.login('ana');
    const first = (await world.as(ana, 'GET', `/api/items/${effectId}`)).json();
    const stale = (await world.as(ana, 'POST', `/api/items/${effectId}/decisions`, { action: 'approve', escalation: first.item.escalation })).json();
    expect(stale.status).toBe('REFUSED:stale_premise');
    expect(stale.item.item).toMatchObject({ reason: 'stale_premise', changes: [{ field: 'refunded_by_others', was: 0, now: 3_000 }, { field: 'refunded_outside', was: 0, now: 3_000 }], repairs: [{ code: 'refund_remaining', set: { amount: 7_000 } }] });
    const repaired = (await world.as(ana, 'POST', `/api/items/${effectId}/decisions`, { action: 'repair', escalation: stale.item.item.escalation, repair_index: 0 })).json();
    // The child (7,000 cents) is still over the limit: it waits for ap-leads, and ana is in ap-leads, so it is approved at once.
    expect(repaired.status).toBe('COMMITTED');
    expect(world.sandbox.refunds(pi).map((r) => r.amount).sort()).toEqual([3_000, 7_000]);
  });

  it('a state-changing call without the CSRF token is refused and writes nothing', async () => {
    const { effectId } = await queued('ap-3');
    const ana = await world.login('ana');
    const item = (await world.as(ana, 'GET', `/api/items/${effectId}`)).json();
    const before = await world.entryCount();
    const forged = await world.app.inject({ method: 'POST', url: `/api/items/${effectId}/decisions`, headers: { cookie: ana.cookie }, payload: { action: 'approve', escalation: item.item.escalation } });
    expect([forged.statusCode, forged.json().error.code]).toEqual([403, 'csrf_failed']);
    expect(await world.entryCount()).toBe(before);
  });

  it('someone outside the groups cannot decide with their own token; a cross-site form post with the cookie alone is csrf_failed', async () => {
    // The server's answers of journey 7 (e2e/journeys.spec.ts), which keeps what the pages show.
    const { pi, effectId } = await queued('ap-3b');
    const ana = await world.login('ana');
    const cy = await world.login('cy');
    const { escalation } = (await world.as(ana, 'GET', `/api/items/${effectId}`)).json().item;
    const before = await world.entryCount();
    const asCy = await world.as(cy, 'POST', `/api/items/${effectId}/decisions`, { action: 'approve', escalation });
    expect(asCy.statusCode).toBe(404);
    // A form another site makes ana's browser post: her cookie goes along, but no CSRF token does.
    const forged = await world.app.inject({
      method: 'POST',
      url: `/api/items/${effectId}/decisions`,
      headers: { cookie: ana.cookie, 'content-type': 'application/x-www-form-urlencoded', origin: 'https://attacker.example', referer: 'https://attacker.example/win-a-prize' },
      payload: new URLSearchParams({ action: 'approve', escalation }).toString(),
    });
    expect([forged.statusCode, forged.json().error.code]).toEqual([403, 'csrf_failed']);
    expect(await world.entryCount()).toBe(before);
    expect(world.sandbox.refunds(pi)).toEqual([]);
    expect((await world.as(ana, 'GET', '/api/inbox')).json().items.some((i: { effect_id: string }) => i.effect_id === effectId)).toBe(true);
  });

  it('a decision on a superseded escalation is SUPERSEDED; a non-member is refused; bad bodies are validation_failed', async () => {
    const { effectId } = await queued('ap-4');
    const ana = await world.login('ana');
    const fm = await world.login('fm');
    const item = (await world.as(ana, 'GET', `/api/items/${effectId}`)).json().item;
    await world.as(ana, 'POST', '/api/test/clock', { advance_ms: 4 * 3_600_000 + 1_000 });
    const moved = (await world.as(fm, 'GET', `/api/items/${effectId}`)).json().item;
    expect(moved).toMatchObject({ group: 'finance-manager', level: 1, breach: true });
    const before = await world.entryCount();
    expect((await world.as(fm, 'POST', `/api/items/${effectId}/decisions`, { action: 'approve', escalation: item.escalation })).json().status).toBe('SUPERSEDED');
    expect((await world.as(ana, 'POST', `/api/items/${effectId}/decisions`, { action: 'approve', escalation: moved.escalation })).json().status).toBe('REFUSED:lease');
    const bad = await world.as(fm, 'POST', `/api/items/${effectId}/decisions`, { action: 'approve', escalation: moved.escalation, extra: 1 });
    expect([bad.statusCode, bad.json().error.code]).toEqual([400, 'validation_failed']);
    expect(await world.entryCount()).toBe(before);
    expect((await world.as(fm, 'POST', `/api/items/${effectId}/decisions`, { action: 'approve', escalation: moved.escalation })).json().status).toBe('COMMITTED');
  });

  it('finance reads the inbox but decides nothing (test/http/finance-read-only.test.ts over real HTTP)', async () => {
    const fin = await world.login('fin');
    expect((await world.as(fin, 'GET', '/api/inbox')).statusCode).toBe(200);
    const refused = await world.as(fin, 'POST', '/api/items/0123456789ab/decisions', { action: 'approve', escalation: '0'.repeat(64) });
    expect([refused.statusCode, refused.json().error.code]).toEqual([403, 'forbidden']);
  });

  it('the live feed sends my inbox first, then new items of my groups only', async () => {
    const ana = await world.login('ana');
    const address = await world.app.listen({ port: 0, host: '127.0.0.1' });
    const socket = new WebSocket(`${address.replace('http', 'ws')}/api/live`, { headers: { cookie: ana.cookie } });
    const messages: { type: string; item?: { effect_id: string } | null; items?: unknown[] }[] = [];
    socket.on('message', (data: Buffer) => messages.push(JSON.parse(String(data))));
    const waitFor = async (done: () => boolean) => {
      for (let i = 0; i < 100 && !done(); i++) await new Promise((r) => setTimeout(r, 20));
    };
    await waitFor(() => messages.length > 0);
    expect(messages[0]?.type).toBe('snapshot');
    const { effectId } = await queued('ap-5');
    await queued('ap-6', 30_000, 40_000);
    await waitFor(() => messages.some((m) => m.type === 'item'));
    // A controller's item would have arrived by now too, had it leaked: give it the same chance.
    await new Promise((r) => setTimeout(r, 100));
    const items = messages.filter((m) => m.type === 'item');
    expect(items.map((m) => m.item?.effect_id)).toEqual([effectId]);
    socket.close();
  });

  it('logging out ends the session', async () => {
    const ana = await world.login('ana');
    expect((await world.as(ana, 'DELETE', '/api/session')).statusCode).toBe(200);
    expect((await world.as(ana, 'GET', '/api/inbox')).json().error.code).toBe('unauthorized');
  });
});
