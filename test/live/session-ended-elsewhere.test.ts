import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { SESSION_CONFIRM_MS } from '../../server/sessions/sessions.ts';
import { type AppWorld, buildAppWorld } from '../support/app-world.ts';

// Two servers on one database file: a live page open on one closes within a second of its session
// being ended on the other, though no call comes to find it.

/** Past the second: the socket's close on its way on a busy machine. */
const SLACK_MS = 500;

const dir = mkdtempSync(join(tmpdir(), 'interlock-two-'));
let a: AppWorld;
let b: AppWorld;
let addressOfA: string;
beforeAll(async () => {
  a = await buildAppWorld({ dir });
  b = await buildAppWorld({ dir });
  addressOfA = await a.app.listen({ port: 0, host: '127.0.0.1' });
});
afterAll(async () => {
  await a.close();
  await b.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('a session ended on another server', () => {
  it('closes the live page open on this one within a second, as unauthorized', async () => {
    const ana = await a.login('ana');
    const socket = new WebSocket(`${addressOfA.replace('http', 'ws')}/api/live`, { headers: { cookie: ana.cookie } });
    const closed = new Promise<{ code: number; reason: string; atMs: number }>((resolve) =>
      socket.once('close', (code, reason) => resolve({ code, reason: String(reason), atMs: Date.now() })),
    );
    await new Promise((resolve) => socket.once('open', resolve));
    expect((await b.as(ana, 'DELETE', '/api/session')).statusCode).toBe(200);
    const endedMs = Date.now();
    expect(await closed).toMatchObject({ code: 4401, reason: 'unauthorized' });
    expect((await closed).atMs - endedMs).toBeLessThanOrEqual(SESSION_CONFIRM_MS + SLACK_MS);
    expect((await a.as(ana, 'GET', '/api/session')).statusCode).toBe(401);
  });
});
