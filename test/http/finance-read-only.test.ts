import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { type AppWorld, buildAppWorld } from '../support/app-world.ts';

// interlock.yaml: "finance sees the inbox, the history and the scoreboard but decides nothing".
// Over a real port, as the browser does: finance reads every group's inbox, Done, Closed, items
// and receipts; a decision is 403 forbidden and writes nothing; on the live feed finance hears
// every group's items but is never shown to approvers as viewing one.

let world: AppWorld;
let base: string;
beforeAll(async () => {
  world = await buildAppWorld();
  base = await world.app.listen({ port: 0, host: '127.0.0.1' });
});
afterAll(async () => world.close());

type Who = { cookie: string; csrf: string };

async function call(who: Who, method: string, path: string, body?: unknown) {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { cookie: who.cookie, 'x-csrf-token': who.csrf, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: response.status, json: (await response.json()) as Record<string, unknown> & { error?: { code: string } } };
}

async function ask(requestId: string, amount: number): Promise<string> {
  const pi = await world.payment(100_000);
  return (await world.agent('POST', '/v1/refunds', { request_id: requestId, payment_intent: pi, amount })).json().effect_id as string;
}

type Message = { type: string; items?: { effect_id: string }[]; effect_id?: string; viewers?: { name: string }[] };

async function live(who: Who) {
  const socket = new WebSocket(`${base.replace('http', 'ws')}/api/live`, { headers: { cookie: who.cookie } });
  const messages: Message[] = [];
  socket.on('message', (data: Buffer) => messages.push(JSON.parse(String(data)) as Message));
  await new Promise((resolve, reject) => {
    socket.once('open', resolve);
    socket.once('error', reject);
  });
  for (let i = 0; i < 150 && !messages.some((m) => m.type === 'snapshot'); i++) await new Promise((r) => setTimeout(r, 20));
  return { socket, messages, send: (body: unknown) => socket.send(JSON.stringify(body)) };
}

describe('finance reads the history, decides nothing', () => {
  it('reads every group’s inbox, Done, Closed, items and receipts; a decision is 403 forbidden and writes nothing', async () => {
    const fin = await world.login('fin');
    const ana = await world.login('ana');
    const apLeads = await ask('fin-ap', 8_000);
    const controller = await ask('fin-controller', 25_000);

    const inbox = await call(fin, 'GET', '/api/inbox');
    expect(inbox.status).toBe(200);
    const shown = (inbox.json.items as { effect_id: string; group: string }[]).map((i) => [i.effect_id, i.group]);
    expect(shown).toEqual(expect.arrayContaining([[apLeads, 'ap-leads'], [controller, 'controller']]));
    // ana still sees only her group's.
    const hers = ((await call(ana, 'GET', '/api/inbox')).json.items as { effect_id: string }[]).map((i) => i.effect_id);
    expect(hers).toContain(apLeads);
    expect(hers).not.toContain(controller);

    const item = await call(fin, 'GET', `/api/items/${controller}`);
    expect([item.status, item.json.may_decide]).toEqual([200, false]);
    expect((await call(fin, 'GET', `/api/items/${controller}/receipt`)).status).toBe(200);

    const before = await world.entryCount();
    const escalation = (item.json.item as { escalation: string }).escalation;
    for (const action of [{ action: 'approve', escalation }, { action: 'reject', escalation, reason: 'no' }]) {
      const refused = await call(fin, 'POST', `/api/items/${controller}/decisions`, action);
      expect([refused.status, refused.json.error?.code]).toEqual([403, 'forbidden']);
    }
    expect(await world.entryCount()).toBe(before);

    // Closed by a person in any group, done by policy: both in finance's history.
    const cy = await world.login('cy');
    expect((await call(cy, 'POST', `/api/items/${controller}/decisions`, { action: 'reject', escalation, reason: 'duplicate' })).status).toBe(200);
    const closed = await call(fin, 'GET', '/api/closed');
    expect((closed.json.items as { effect_id: string }[]).map((i) => i.effect_id)).toContain(controller);
    expect((await call(fin, 'GET', '/api/done')).status).toBe(200);
  });

  it('hears every group’s items on the live feed, and is never shown to approvers as a viewer', async () => {
    const item = await ask('fin-live', 8_000);
    const fin = await live(await world.login('fin'));
    const bea = await live(await world.login('bea'));
    expect(fin.messages.find((m) => m.type === 'snapshot')?.items?.map((i) => i.effect_id)).toContain(item);
    fin.send({ type: 'viewing', effect_id: item });
    bea.send({ type: 'viewing', effect_id: item });
    for (let i = 0; i < 150 && !bea.messages.some((m) => m.type === 'presence' && m.effect_id === item); i++) await new Promise((r) => setTimeout(r, 20));
    await new Promise((r) => setTimeout(r, 150));
    const viewers = bea.messages.filter((m) => m.type === 'presence' && m.effect_id === item).at(-1)?.viewers?.map((v) => v.name);
    expect(viewers).toEqual(['bea']);
    fin.socket.close();
    bea.socket.close();
  });
});
