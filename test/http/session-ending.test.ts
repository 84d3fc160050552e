import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { LiveMessage } from '../../shared/api.ts';
import { BACKGROUND_HEADER } from '../../server/http/session-routes.ts';
import { MemorySessions } from '../../db/memory/sessions.ts';
import { SessionStore } from '../../server/sessions/sessions.ts';
import { sessionWarningLeadMs } from '../../server/live/session-watch.ts';
import { type AppWorld, buildAppWorld, testConfig } from '../support/app-world.ts';

// A session ends at its idle limit however long a page stays open on it: the open page is warned
// before (with a way to stay), is told at the end (the feed closes as expired), and what it reads
// by itself, because the feed said something moved, never keeps the session alive.

// Long enough that a loaded machine answers a call well inside the warning (half the limit, 2 s).
const IDLE_MS = 4_000;

let world: AppWorld;
let address: string;
beforeAll(async () => {
  world = await buildAppWorld({ config: testConfig({ sessions: { idleMs: IDLE_MS, absoluteMs: 60_000 } }) });
  address = await world.app.listen({ port: 0, host: '127.0.0.1' });
});
afterAll(async () => world.close());

type SessionMessage = Extract<LiveMessage, { type: 'session' }>;

async function feedOf(who: { cookie: string }) {
  const socket = new WebSocket(`${address.replace('http', 'ws')}/api/live`, { headers: { cookie: who.cookie } });
  const said: SessionMessage[] = [];
  const closed = new Promise<{ code: number; reason: string; atMs: number }>((resolve) =>
    socket.once('close', (code, reason) => resolve({ code, reason: String(reason), atMs: Date.now() })),
  );
  socket.on('message', (data: Buffer) => {
    const message = JSON.parse(String(data)) as LiveMessage;
    if (message.type === 'session') said.push(message);
  });
  await new Promise((resolve) => socket.once('open', resolve));
  return { socket, said, closed };
}

async function until(done: () => boolean, ms: number): Promise<void> {
  for (const end = Date.now() + ms; !done() && Date.now() < end; ) await new Promise((r) => setTimeout(r, 20));
}

describe('a session ending under an open page', () => {
  it('warns the page at the lead before the idle limit, with a way to stay, then closes the feed as expired, and a call after is refused', async () => {
    // Taken before the login: the session's idle time starts at the login's answer, not after it.
    const startedMs = Date.now();
    const ana = await world.login('ana');
    const feed = await feedOf(ana);
    await until(() => feed.said.length > 0, IDLE_MS);
    expect(feed.said[0]).toMatchObject({ type: 'session', warning: true, renewable: true });
    expect(feed.said[0]!.ends_in_ms).toBeLessThanOrEqual(sessionWarningLeadMs(IDLE_MS));
    const closed = await feed.closed;
    expect(closed).toMatchObject({ code: 4401, reason: 'session_expired' });
    expect(closed.atMs - startedMs).toBeGreaterThanOrEqual(IDLE_MS);
    expect(closed.atMs - startedMs).toBeLessThan(IDLE_MS + 2_000);
    const after = await world.as(ana, 'GET', '/api/inbox');
    expect(after.statusCode).toBe(401);
    expect(after.json().error.code).toMatch(/^(session_expired|unauthorized)$/);
  });

  it('a call while warned ("Stay signed in") takes the warning back and keeps the feed open past the first end', async () => {
    const ana = await world.login('ana');
    const feed = await feedOf(ana);
    await until(() => feed.said.some((m) => m.warning), IDLE_MS);
    expect((await world.as(ana, 'GET', '/api/session')).statusCode).toBe(200);
    await until(() => feed.said.at(-1)?.warning === false, 6_000);
    expect(feed.said.at(-1)).toMatchObject({ warning: false, renewable: true });
    expect(feed.said.at(-1)!.ends_in_ms).toBeGreaterThan(sessionWarningLeadMs(IDLE_MS));
    // Open still, where the first end has passed.
    expect(feed.socket.readyState).toBe(WebSocket.OPEN);
    feed.socket.close();
  });

  it('a read the page makes by itself (x-interlock-background) is answered but does not keep the session alive', async () => {
    const ana = await world.login('ana');
    const feed = await feedOf(ana);
    await new Promise((r) => setTimeout(r, IDLE_MS / 2));
    const background = await world.app.inject({ method: 'GET', url: '/api/inbox', headers: { cookie: ana.cookie, [BACKGROUND_HEADER]: '1' } });
    expect(background.statusCode).toBe(200);
    expect(await feed.closed).toMatchObject({ code: 4401, reason: 'session_expired' });
  });
});

describe('a live feed opened again', () => {
  it('does not keep the session alive: a feed reopened halfway is still closed at the first end', async () => {
    const ana = await world.login('ana');
    const startedMs = Date.now();
    const first = await feedOf(ana);
    await new Promise((r) => setTimeout(r, IDLE_MS / 2));
    first.socket.close();
    const again = await feedOf(ana);
    const closed = await again.closed;
    expect(closed).toMatchObject({ code: 4401, reason: 'session_expired' });
    expect(closed.atMs - startedMs).toBeLessThan(IDLE_MS + 2_000);
  });
});

describe('SessionStore', () => {
  it('check() answers the session without refreshing it; endsAtMs names the limit that ends it first', async () => {
    let nowMs = 1_000_000;
    const store = new SessionStore({ idleMs: 100, absoluteMs: 250, wallMs: () => nowMs, store: new MemorySessions() });
    const { id, session } = await store.create('ana');
    expect(store.endsAtMs(session)).toEqual({ atMs: 1_000_101, renewable: true });
    nowMs += 80;
    expect(await store.check(id)).toBe(session);
    expect(store.endsAtMs(session)).toEqual({ atMs: 1_000_101, renewable: true });
    expect(await store.touch(id)).toBe(session);
    expect(store.endsAtMs(session)).toEqual({ atMs: 1_000_181, renewable: true });
    nowMs += 90;
    expect(await store.expireIfDue(session)).toBe(false);
    expect(await store.touch(id)).toBe(session);
    // Idle would end it at +270; the absolute limit ends it at +250, and no call moves that.
    expect(store.endsAtMs(session)).toEqual({ atMs: 1_000_250, renewable: false });
    const ended: string[] = [];
    store.onEnded((_, why) => ended.push(why));
    nowMs = 1_000_251;
    expect(await store.expireIfDue(session)).toBe(true);
    expect(ended).toEqual(['expired']);
    expect(await store.check(id)).toBeNull();
  });
});
