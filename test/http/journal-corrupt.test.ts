import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { AppClock } from '../../server/clock.ts';
import { signWebhook } from '../../server/confirm/signature.ts';
import { type Sandbox, startSandbox } from '../../server/sandbox/index.ts';
import { type AppWorld, buildAppWorld, WEBHOOK_SECRET } from '../support/app-world.ts';

// A stored journal entry that fails its hash is never swallowed: it is logged once, as one line
// naming the seq and the effect id, and until an operator restarts Interlock readiness, every
// view (HTTP and websocket), the agents' POST /v1/refunds and Stripe's webhook answer 503
// journal_unavailable, with nothing written to the journal or sent to Stripe. The journal here is written by the
// real server, then one row of the SQLite file is edited with its append-only trigger dropped.

interface Logged {
  lines: string[];
  /** The log lines that report a corrupt journal. */
  corrupt(): string[];
}

function captureLog(): { logged: Logged; logger: object } {
  const lines: string[] = [];
  return {
    logged: { lines, corrupt: () => lines.filter((line) => /journal corrupt/.test(line)) },
    logger: { level: 'info', stream: { write: (line: string) => lines.push(line) } },
  };
}

/** The journal's own file, read past the store: its row count, and one row edited as an attacker would. */
function journalFile(dir: string) {
  const open = () => new Database(join(dir, 'interlock.sqlite'));
  return {
    count(): number {
      const db = open();
      try {
        return db.prepare('SELECT count(*) FROM entries').pluck().get() as number;
      } finally {
        db.close();
      }
    },
    /** Edit the body of the first row of `kind` for `effectId` after sealing; returns its seq. */
    corrupt(effectId: string, kind: string): number {
      const db = open();
      try {
        db.exec('DROP TRIGGER IF EXISTS entries_no_update');
        const seq = db.prepare('SELECT seq FROM entries WHERE effect_id = ? AND kind = ? ORDER BY seq LIMIT 1').pluck().get(effectId, kind) as number;
        db.prepare(`UPDATE entries SET body = json_set(body, '$.effect.amount', 1) WHERE seq = ?`).run(seq);
        return seq;
      } finally {
        db.close();
      }
    },
  };
}

/** A refund request that needs a person; its effect id. */
async function queued(world: AppWorld, requestId: string): Promise<string> {
  const pi = await world.payment(50_000);
  const posted = await world.agent('POST', '/v1/refunds', { request_id: requestId, payment_intent: pi, amount: 8_000 });
  expect(posted.json().status).toBe('QUEUED');
  return posted.json().effect_id as string;
}

/** What a websocket upgrade to /api/live is answered, as a status code or a close. */
async function liveAnswer(world: AppWorld, cookie: string): Promise<{ status: number; body: string } | { closed: [number, string] }> {
  const address = world.app.server.listening ? `http://127.0.0.1:${(world.app.server.address() as { port: number }).port}` : await world.app.listen({ port: 0, host: '127.0.0.1' });
  const socket = new WebSocket(`${address.replace('http', 'ws')}/api/live`, { headers: { cookie } });
  return new Promise((resolve) => {
    socket.on('unexpected-response', (_request, response) => {
      let body = '';
      response.on('data', (chunk: Buffer) => {
        body += chunk.toString();
      });
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
    });
    socket.on('close', (code, reason) => resolve({ closed: [code, reason.toString()] }));
  });
}

/** Every view a person reads, and the agents' refund request: each must be 503 journal_unavailable, writing and sending nothing. */
async function expectAllRefused(world: AppWorld, effectId: string) {
  const file = journalFile(world.dir);
  const entries = file.count();
  const refunds = world.sandbox.refunds().length;
  const refused = (answer: { statusCode: number; json(): { error: { code: string } } }) => [answer.statusCode, answer.json().error.code];
  const unavailable = [503, 'journal_unavailable'];

  expect(refused(await world.app.inject({ method: 'GET', url: '/readyz' }))).toEqual(unavailable);
  expect((await world.app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
  const ana = await world.login('ana');
  const fin = await world.login('fin');
  for (const url of ['/api/inbox', '/api/done', '/api/closed', `/api/items/${effectId}`, `/api/items/${effectId}/receipt`]) {
    expect([url, ...refused(await world.as(ana, 'GET', url))]).toEqual([url, ...unavailable]);
  }
  const decision = await world.as(ana, 'POST', `/api/items/${effectId}/decisions`, { action: 'approve', escalation: 'a'.repeat(64) });
  expect(refused(decision)).toEqual(unavailable);
  for (const url of ['/api/scoreboard', '/api/scoreboard.csv', '/api/scoreboard/series']) {
    expect([url, ...refused(await world.as(fin, 'GET', url))]).toEqual([url, ...unavailable]);
  }
  const live = await liveAnswer(world, ana.cookie);
  expect(live).toMatchObject({ status: 503 });
  expect(JSON.parse((live as { body: string }).body).error.code).toBe('journal_unavailable');

  const pi = await world.payment(10_000);
  const routine = await world.agent('POST', '/v1/refunds', { request_id: 'after-corruption', payment_intent: pi, amount: 1_000 });
  expect(refused(routine)).toEqual(unavailable);
  const event = JSON.stringify({ id: 'evt_after_corruption', object: 'event', type: 'refund.updated', data: { object: { id: 're_x', object: 'refund' } } });
  const delivered = await world.app.inject({
    method: 'POST',
    url: '/webhooks/stripe',
    headers: { 'content-type': 'application/json', 'stripe-signature': signWebhook(event, WEBHOOK_SECRET, Math.floor(world.clock.wallMs() / 1000)) },
    payload: event,
  });
  expect(refused(delivered)).toEqual(unavailable);
  expect(file.count()).toBe(entries);
  expect(world.sandbox.refunds(pi)).toEqual([]);
  expect(world.sandbox.refunds()).toHaveLength(refunds);
}

describe('a corrupt journal found at start-up', () => {
  let first: AppWorld;
  let restarted: AppWorld;
  let sandbox: Sandbox;
  let effectId: string;
  let seq: number;
  let logged: Logged;
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'interlock-corrupt-'));
    const clock = new AppClock();
    sandbox = await startSandbox({ clockMs: () => clock.wallMs() });
    first = await buildAppWorld({ dir, clock, sandbox });
    const pi = await first.payment(10_000);
    expect((await first.agent('POST', '/v1/refunds', { request_id: 'routine-1', payment_intent: pi, amount: 1_000 })).json().status).toBe('COMMITTED');
    effectId = await queued(first, 'queued-1');
    await first.close();
    seq = journalFile(dir).corrupt(effectId, 'PROPOSED');
    const log = captureLog();
    logged = log.logged;
    restarted = await buildAppWorld({ dir, clock, sandbox, logger: log.logger });
  });
  afterAll(async () => {
    await restarted.close();
    await sandbox.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('the server stays up and answers 503 journal_unavailable to readiness, every view and every refund request, writing and sending nothing', async () => {
    expect(restarted.services.views.unavailable?.corrupt).toMatchObject({ seq, effectId });
    await expectAllRefused(restarted, effectId);
  });

  it('is logged once, as one line naming the seq and the effect id', () => {
    const lines = logged.corrupt();
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({ level: 60, code: 'journal_corrupt', seq, effectId });
    expect(lines[0]).toContain(`seq ${seq}, effect ${effectId}`);
  });
});

describe('a corrupt journal found while running', () => {
  let here: AppWorld;
  let there: AppWorld;
  let logged: Logged;
  beforeAll(async () => {
    const log = captureLog();
    logged = log.logged;
    here = await buildAppWorld({ logger: log.logger });
    there = await buildAppWorld({ dir: here.dir, clock: here.clock, sandbox: here.sandbox });
  });
  afterAll(async () => {
    await there.close();
    await here.close();
  });

  it('an entry another server wrote and someone then edited: the next read finds it, the live pages are closed, and everything answers 503', async () => {
    const mine = await queued(here, 'mine-1');
    const ana = await here.login('ana');
    expect((await here.as(ana, 'GET', '/api/inbox')).statusCode).toBe(200);
    const open = liveAnswer(here, ana.cookie);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const theirs = await queued(there, 'theirs-1');
    const seq = journalFile(here.dir).corrupt(theirs, 'PROPOSED');

    const first = await here.as(ana, 'GET', '/api/inbox');
    expect([first.statusCode, first.json().error.code]).toEqual([503, 'journal_unavailable']);
    expect(await open).toEqual({ closed: [1011, 'journal_unavailable'] });
    await expectAllRefused(here, mine);
    const lines = logged.corrupt();
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({ seq, effectId: theirs });
  });
});

describe('a corrupt chain met by a route outside the views', () => {
  let world: AppWorld;
  let logged: Logged;
  beforeAll(async () => {
    const log = captureLog();
    logged = log.logged;
    world = await buildAppWorld({ logger: log.logger });
  });
  afterAll(async () => world.close());

  it('an agent reading its refund meets the edited row: 503 journal_unavailable, logged once, and the views refuse from then on', async () => {
    const effectId = await queued(world, 'read-back-1');
    const ana = await world.login('ana');
    expect((await world.as(ana, 'GET', '/api/inbox')).statusCode).toBe(200);
    // The views have folded this row already: only a read of the chain itself meets the edit.
    const seq = journalFile(world.dir).corrupt(effectId, 'PROPOSED');
    const read = await world.agent('GET', '/v1/refunds/read-back-1');
    expect([read.statusCode, read.json().error.code]).toEqual([503, 'journal_unavailable']);
    expect(world.services.views.unavailable?.corrupt).toMatchObject({ seq, effectId });
    const inbox = await world.as(ana, 'GET', '/api/inbox');
    expect([inbox.statusCode, inbox.json().error.code]).toEqual([503, 'journal_unavailable']);
    expect(logged.corrupt()).toHaveLength(1);
  });
});
