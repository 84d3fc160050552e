import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { type AppWorld, buildAppWorld } from '../support/app-world.ts';

// Who is looking at an item now, over the live websocket, never journaled: ana opens an item and
// bea (same group) is told "Ana Lopez is viewing"; cy (another group) hears nothing of it; when
// ana's page goes elsewhere or closes, the item has no viewer again.

let world: AppWorld;
let address: string;
beforeAll(async () => {
  world = await buildAppWorld();
  address = await world.app.listen({ port: 0, host: '127.0.0.1' });
});
afterAll(async () => world.close());

type Message = { type: string; effect_id?: string; viewers?: { name: string; display_name: string }[] };

async function connect(name: string) {
  const who = await world.login(name);
  const socket = new WebSocket(`${address.replace('http', 'ws')}/api/live`, { headers: { cookie: who.cookie } });
  const messages: Message[] = [];
  socket.on('message', (data: Buffer) => messages.push(JSON.parse(String(data))));
  await new Promise((resolve) => socket.once('open', resolve));
  await until(() => messages.some((m) => m.type === 'snapshot'));
  return { socket, messages, send: (body: unknown) => socket.send(JSON.stringify(body)) };
}

async function until(done: () => boolean): Promise<void> {
  for (let i = 0; i < 150 && !done(); i++) await new Promise((r) => setTimeout(r, 20));
}

const presenceOf = (messages: Message[], effectId: string) => messages.filter((m) => m.type === 'presence' && m.effect_id === effectId).at(-1)?.viewers;

describe('presence', () => {
  it('tells the group who is viewing an item, and nobody outside it; a page that leaves or closes is gone', async () => {
    const pi = await world.payment(10_000);
    const effectId = (await world.agent('POST', '/v1/refunds', { request_id: 'seen-1', payment_intent: pi, amount: 8_000 })).json().effect_id as string;
    const [ana, bea, cy] = await Promise.all([connect('ana'), connect('bea'), connect('cy')]);
    const before = await world.entryCount();
    ana.send({ type: 'viewing', effect_id: effectId });
    await until(() => presenceOf(bea.messages, effectId)?.length === 1);
    expect(presenceOf(bea.messages, effectId)).toEqual([{ name: 'ana', display_name: 'Ana Lopez' }]);
    // cy may not see the item: he is told nothing, and cannot appear as its viewer either.
    cy.send({ type: 'viewing', effect_id: effectId });
    await new Promise((r) => setTimeout(r, 150));
    expect(presenceOf(cy.messages, effectId)).toBeUndefined();
    expect(presenceOf(bea.messages, effectId)).toEqual([{ name: 'ana', display_name: 'Ana Lopez' }]);
    // Garbage is ignored.
    ana.socket.send('not json');
    ana.send({ type: 'viewing', effect_id: '../../etc' });
    bea.send({ type: 'viewing', effect_id: effectId });
    await until(() => presenceOf(ana.messages, effectId)?.length === 2);
    expect(presenceOf(ana.messages, effectId)?.map((v) => v.name)).toEqual(['ana', 'bea']);
    ana.send({ type: 'viewing', effect_id: null });
    await until(() => presenceOf(bea.messages, effectId)?.length === 1 && presenceOf(bea.messages, effectId)?.[0]?.name === 'bea');
    bea.socket.close();
    await until(() => presenceOf(ana.messages, effectId)?.length === 0);
    expect(presenceOf(ana.messages, effectId)).toEqual([]);
    // Nothing of it is journaled.
    expect(await world.entryCount()).toBe(before);
    for (const c of [ana, cy]) c.socket.close();
  });

  it('a page that joins is told at once who views the items of its groups, after its snapshot, and nothing of items outside them', async () => {
    const pi = await world.payment(10_000);
    const seen = (await world.agent('POST', '/v1/refunds', { request_id: 'seen-on-join', payment_intent: pi, amount: 8_000 })).json().effect_id as string;
    const unseen = (await world.agent('POST', '/v1/refunds', { request_id: 'unseen-on-join', payment_intent: await world.payment(10_000), amount: 7_000 })).json().effect_id as string;
    const bea = await connect('bea');
    bea.send({ type: 'viewing', effect_id: seen });
    // The first socket hears its own presence once the server has it.
    await until(() => presenceOf(bea.messages, seen)?.length === 1);
    const later = await connect('ana');
    await until(() => presenceOf(later.messages, seen) !== undefined);
    expect(presenceOf(later.messages, seen)).toEqual([{ name: 'bea', display_name: 'Bea Novak' }]);
    const types = later.messages.map((m) => m.type);
    expect(types.indexOf('snapshot')).toBeLessThan(types.indexOf('presence'));
    // Items nobody views are not told; an item of no group of cy's is not told to cy.
    expect(presenceOf(later.messages, unseen)).toBeUndefined();
    const cy = await connect('cy');
    await new Promise((r) => setTimeout(r, 150));
    expect(cy.messages.filter((m) => m.type === 'presence')).toEqual([]);
    for (const c of [bea, later, cy]) c.socket.close();
  });
});
