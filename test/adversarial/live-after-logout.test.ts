import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { type AppWorld, buildAppWorld, testConfig } from '../support/app-world.ts';

// The attack: a live feed outlives its session. ana opens the live websocket, then logs out (or
// her session is ended for her). The session cookie was checked only when the socket opened, so
// the socket stayed open: every new item of her groups (request, amount, payment, the agent's
// reason) still reached it, and she still showed as viewing an item, with no session at all.

let world: AppWorld;
let address: string;
beforeAll(async () => {
  world = await buildAppWorld();
  address = await world.app.listen({ port: 0, host: '127.0.0.1' });
});
afterAll(async () => world.close());

type Message = { type: string; effect_id?: string; item?: { request_id?: string } | null };

async function connect(who: { cookie: string }) {
  const socket = new WebSocket(`${address.replace('http', 'ws')}/api/live`, { headers: { cookie: who.cookie } });
  const messages: Message[] = [];
  const closed = new Promise<{ code: number; reason: string }>((resolve) => socket.once('close', (code, reason) => resolve({ code, reason: String(reason) })));
  socket.on('message', (data: Buffer) => messages.push(JSON.parse(String(data))));
  await new Promise((resolve) => socket.once('open', resolve));
  await until(() => messages.some((m) => m.type === 'snapshot'));
  return { socket, messages, closed };
}

async function until(done: () => boolean, tries = 150): Promise<void> {
  for (let i = 0; i < tries && !done(); i++) await new Promise((r) => setTimeout(r, 20));
}

describe('a live feed ends with its session', () => {
  it('after ana logs out her socket is closed, and hears nothing of an item that arrives later', async () => {
    const ana = await world.login('ana');
    const feed = await connect(ana);
    let closedWith: { code: number; reason: string } | null = null;
    void feed.closed.then((c) => {
      closedWith = c;
    });
    expect((await world.as(ana, 'DELETE', '/api/session')).statusCode).toBe(200);
    await until(() => closedWith !== null, 50);
    const later = await world.agent('POST', '/v1/refunds', { request_id: 'after-logout-1', payment_intent: await world.payment(10_000), amount: 8_000 });
    expect(later.json().status).toBe('QUEUED');
    await world.services.views.current();
    await new Promise((r) => setTimeout(r, 200));
    const told = feed.messages.filter((m) => m.type === 'item' && m.effect_id === later.json().effect_id);
    feed.socket.close();
    expect(told).toEqual([]);
    expect(closedWith).toEqual({ code: 4401, reason: 'unauthorized' });
  });

  it('bea’s feed is untouched by ana’s logout, and another of ana’s sessions keeps its own', async () => {
    const bea = await world.login('bea');
    const anaHere = await world.login('ana');
    const anaThere = await world.login('ana');
    const [beaFeed, hereFeed, thereFeed] = await Promise.all([connect(bea), connect(anaHere), connect(anaThere)]);
    expect((await world.as(anaThere, 'DELETE', '/api/session')).statusCode).toBe(200);
    expect((await thereFeed.closed).code).toBe(4401);
    const later = await world.agent('POST', '/v1/refunds', { request_id: 'after-logout-2', payment_intent: await world.payment(10_000), amount: 8_000 });
    const effectId = later.json().effect_id as string;
    await until(() => [beaFeed, hereFeed].every((f) => f.messages.some((m) => m.type === 'item' && m.effect_id === effectId)));
    for (const feed of [beaFeed, hereFeed]) {
      expect(feed.messages.some((m) => m.type === 'item' && m.effect_id === effectId)).toBe(true);
      feed.socket.close();
    }
  });
});

describe('a live feed ends at its session’s absolute limit', () => {
  it('the socket is closed (4401 session_expired) once the session is older than sessions.absoluteMs, though it never made a request', async () => {
    const short = await buildAppWorld({ config: testConfig({ sessions: { idleMs: 600, absoluteMs: 600 } }) });
    try {
      const base = await short.app.listen({ port: 0, host: '127.0.0.1' });
      const ana = await short.login('ana');
      const socket = new WebSocket(`${base.replace('http', 'ws')}/api/live`, { headers: { cookie: ana.cookie } });
      const closed = new Promise<{ code: number; reason: string }>((resolve) => socket.once('close', (code, reason) => resolve({ code, reason: String(reason) })));
      await new Promise((resolve) => socket.once('open', resolve));
      const outcome = await Promise.race([closed, new Promise<'still open'>((resolve) => setTimeout(() => resolve('still open'), 3_000))]);
      socket.close();
      expect(outcome).toEqual({ code: 4401, reason: 'session_expired' });
    } finally {
      await short.close();
    }
  });
});
