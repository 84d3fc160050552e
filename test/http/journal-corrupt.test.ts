import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import WebSocket from 'ws';
import { AppClock } from '../../server/app/clock.ts';
import { signWebhook } from '../../server/confirm/signature.ts';
import { LIVE_PATH } from '../../server/http/openapi.ts';
import { canonical, sealEntry } from '../../server/journal/hash.ts';
import { type Sandbox, startSandbox } from '../../server/sandbox/index.ts';
import { requestPayload } from '../../shared/api.ts';
import { Reconciler } from '../../server/confirm/reconciler.ts';
import { SimulatedCrash } from '../../server/gate/target.ts';
import type { Channels } from '../../server/outbox/types.ts';
import { isJournalFailure } from '../../server/views/failures.ts';
import { type AppWorld, buildAppWorld, testConfig, WEBHOOK_SECRET } from '../support/app-world.ts';

// A stored journal entry that fails its hash is never swallowed: it is logged once, as one line
// naming the seq and the effect id, and until an operator restarts Interlock readiness, every
// GET route that shows journal data (walked from the OpenAPI document, HTTP and websocket), the
// agents' POST /v1/refunds, decisions, reconciliation runs and Stripe's webhook answer 503
// journal_unavailable, with nothing written to the journal, sent to Stripe or told to anyone. The
// journal here is written by the real server, then the SQLite file is changed as an attacker
// would: a row edited with its append-only trigger dropped, a row forged onto it while the
// server runs (each route must be the first to find it), a last row rewritten with a hash that
// holds (no receipt may be signed over it).

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
    /**
     * Append a row that starts a chain of its own, a copy of the first row of `effectId` under
     * another effect id, whose body does not match its hash: a row no route asks for by name.
     */
    forge(effectId: string): number {
      const db = open();
      try {
        const first = db.prepare('SELECT * FROM entries WHERE effect_id = ? ORDER BY seq LIMIT 1').get(effectId) as { kind: string; ts_ms: number; body: string };
        const forgedId = 'f0f0f0f0f0f0';
        const hash = 'f'.repeat(64);
        const body = JSON.stringify({ ...JSON.parse(first.body), effect_id: forgedId, hash });
        const insert = db.prepare('INSERT INTO entries (effect_id, kind, prev, hash, closes, ts_ms, body, reserves) VALUES (?, ?, NULL, ?, 0, ?, ?, NULL)');
        return Number(insert.run(forgedId, first.kind, hash, first.ts_ms, body).lastInsertRowid);
      } finally {
        db.close();
      }
    },
    /**
     * Rewrite the last row of `effectId` with another result and a hash that holds over the new
     * body (the hash is not a secret): a read of the chain alone cannot tell it from the row
     * the views verified.
     */
    rewriteLast(effectId: string, patch: Record<string, unknown>): void {
      const db = open();
      try {
        db.exec('DROP TRIGGER IF EXISTS entries_no_update');
        const last = db.prepare('SELECT seq, body FROM entries WHERE effect_id = ? ORDER BY seq DESC LIMIT 1').get(effectId) as { seq: number; body: string };
        const { hash: _old, ...fields } = JSON.parse(last.body);
        const rewritten = sealEntry({ ...fields, ...patch });
        db.prepare('UPDATE entries SET body = ?, hash = ? WHERE seq = ?').run(canonical(rewritten), rewritten.hash, last.seq);
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

/** GET routes of the document that show nothing of the journal: they answer whatever it holds. */
const SHOWS_NO_JOURNAL = new Set([
  'GET /healthz',
  'GET /.well-known/interlock-keys',
  'GET /api/session',
  'GET /api/directory',
  'GET /openapi.json',
  'GET /docs',
  // The metrics show no journal figure once it failed a check, and keep answering, so the scraper
  // sees interlock_journal_available 0 rather than a target down.
  'GET /metrics',
]);
// Showing nothing of the journal either: the assets of /docs and the web inbox's pages (not in the document).

/** Every GET route of the OpenAPI document, `/path/{param}` as the document writes it. */
async function documentedGets(world: AppWorld): Promise<string[]> {
  const document = (await world.app.inject({ method: 'GET', url: '/openapi.json' })).json() as { paths: Record<string, Record<string, unknown>> };
  return Object.entries(document.paths)
    .filter(([, operations]) => 'get' in operations)
    .map(([path]) => path)
    .sort();
}

/** A route's URL with its parameters filled in; a parameter the walk has no value for fails it, naming the route. */
function urlOf(path: string, values: Record<string, string>): string {
  return path.replace(/\{(\w+)\}/g, (_match, name: string) => {
    const value = values[name];
    if (value === undefined) throw new Error(`${path}: the walk has no value for {${name}}; give it one`);
    return value;
  });
}

/** A GET as its audience asks it: the agents' routes with the agent's token, the live feed as a websocket, the rest as finance. */
async function askFirst(world: AppWorld, path: string, url: string, fin: { cookie: string; csrf: string }): Promise<[number, string | null]> {
  if (path === LIVE_PATH) {
    const live = await liveAnswer(world, fin.cookie);
    return 'status' in live ? [live.status, JSON.parse(live.body).error?.code ?? null] : live.closed;
  }
  const answer = path.startsWith('/v1/') ? await world.agent('GET', url) : await world.as(fin, 'GET', url);
  return [answer.statusCode, answer.statusCode === 200 ? null : (answer.json().error?.code ?? null)];
}

/** Start a reconciliation run as finance and wait until it has finished; its id. */
async function finishedRun(world: AppWorld, fin: { cookie: string; csrf: string }): Promise<string> {
  const toMs = world.clock.wallMs() + 3_600_000;
  const started = await world.as(fin, 'POST', '/api/reconciliation', { from_ms: toMs - 86_400_000, to_ms: toMs });
  expect(started.statusCode).toBe(202);
  const id = started.json().id as string;
  // A run reads Stripe through the paced budget: on a loaded machine it took more than waitFor's 1 s.
  await vi.waitFor(async () => expect((await world.as(fin, 'GET', `/api/reconciliation/${id}`)).json().state).toBe('done'), { timeout: 15_000, interval: 100 });
  return id;
}

/**
 * Every GET route that shows journal data (the whole document, less SHOWS_NO_JOURNAL), a decision,
 * a reconciliation run, the agents' refund request and Stripe's webhook: each must be 503
 * journal_unavailable, writing and sending nothing.
 */
async function expectAllRefused(world: AppWorld, effectId: string, requestId: string) {
  const file = journalFile(world.dir);
  const entries = file.count();
  const refunds = world.sandbox.refunds().length;
  const refused = (answer: { statusCode: number; json(): { error: { code: string } } }) => [answer.statusCode, answer.json().error.code];
  const unavailable = [503, 'journal_unavailable'];

  expect((await world.app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
  const ana = await world.login('ana');
  const fin = await world.login('fin');
  const routes = await documentedGets(world);
  const values = { request_id: requestId, effect_id: effectId, run_id: 'rec_0000000000000000' };
  const answers: Array<[string, number, string | null]> = [];
  for (const path of routes) answers.push([`GET ${path}`, ...(await askFirst(world, path, urlOf(path, values), fin))]);
  expect(answers).toEqual(routes.map((path) => (SHOWS_NO_JOURNAL.has(`GET ${path}`) ? [`GET ${path}`, 200, null] : [`GET ${path}`, 503, 'journal_unavailable'])));
  const decision = await world.as(ana, 'POST', `/api/items/${effectId}/decisions`, { action: 'approve', escalation: 'a'.repeat(64) });
  expect(refused(decision)).toEqual(unavailable);
  const run = await world.as(fin, 'POST', '/api/reconciliation', { from_ms: 0, to_ms: 86_400_000 });
  expect(refused(run)).toEqual(unavailable);
  // The walk asked as finance; an approver's live page is refused the same way.
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
    await expectAllRefused(restarted, effectId, 'queued-1');
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
    await expectAllRefused(here, mine, 'mine-1');
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

describe('a row forged while the server runs', () => {
  let sandbox: Sandbox;
  let clock: AppClock;
  let seeded: string;
  let routine: string;
  let queuedId: string;
  let fin: { cookie: string; csrf: string };
  const dirs: string[] = [];
  beforeAll(async () => {
    seeded = mkdtempSync(join(tmpdir(), 'interlock-forged-'));
    clock = new AppClock();
    sandbox = await startSandbox({ clockMs: () => clock.wallMs() });
    const world = await buildAppWorld({ dir: seeded, clock, sandbox });
    const pi = await world.payment(10_000);
    const committed = await world.agent('POST', '/v1/refunds', { request_id: 'routine-1', payment_intent: pi, amount: 1_000 });
    expect(committed.json().status).toBe('COMMITTED');
    routine = committed.json().effect_id;
    queuedId = await queued(world, 'queued-1');
    // Sessions are kept in the data folder: finance's is good on every copy of it.
    fin = await world.login('fin');
    await world.close();
  });
  afterAll(async () => {
    await sandbox.close();
    for (const dir of [seeded, ...dirs]) rmSync(dir, { recursive: true, force: true });
  });

  /** A server started on a copy of the seeded data folder: its views have read every entry. */
  async function serverOnCopy(): Promise<AppWorld> {
    const dir = mkdtempSync(join(tmpdir(), 'interlock-forged-'));
    dirs.push(dir);
    cpSync(seeded, dir, { recursive: true });
    return buildAppWorld({ dir, clock, sandbox });
  }

  it('every GET route that shows journal data, the first to be asked after the row is forged, answers 503 journal_unavailable; the others still answer', async () => {
    const listed = await serverOnCopy();
    const routes = await documentedGets(listed);
    await listed.close();
    expect([...SHOWS_NO_JOURNAL].filter((route) => !routes.includes(route.slice('GET '.length)))).toEqual([]);
    const answers: Array<[string, number, string | null]> = [];
    for (const path of routes) {
      const world = await serverOnCopy();
      try {
        const values: Record<string, string> = { request_id: 'routine-1', effect_id: queuedId };
        if (path.includes('{run_id}')) values.run_id = await finishedRun(world, fin);
        journalFile(world.dir).forge(queuedId);
        answers.push([`GET ${path}`, ...(await askFirst(world, path, urlOf(path, values), fin))]);
      } finally {
        await world.close();
      }
    }
    expect(answers).toEqual(routes.map((path) => (SHOWS_NO_JOURNAL.has(`GET ${path}`) ? [`GET ${path}`, 200, null] : [`GET ${path}`, 503, 'journal_unavailable'])));
    // One server on a copy of the journal per documented GET route, one after the other: about 30 of them.
  }, 90_000);

  it("a chain's last row rewritten with a hash that holds, after the views verified it: no receipt is signed over it, each receipt route asked first answers 503", async () => {
    const answers: Array<[string, number, string | null]> = [];
    const routes: Array<[string, string, () => void]> = [
      ['/v1/refunds/routine-1', routine, () => undefined],
      [`/v1/receipts/${routine}`, routine, () => undefined],
      [`/v1/receipts/${routine}/verify`, routine, () => undefined],
      [`/api/ledger/${routine}/receipt`, routine, () => undefined],
      [`/api/items/${queuedId}/receipt`, queuedId, () => undefined],
      [`/api/items/${queuedId}`, queuedId, () => undefined],
    ];
    for (const [url, effectId] of routes) {
      const world = await serverOnCopy();
      try {
        journalFile(world.dir).rewriteLast(effectId, { why: 'rewritten', result: { id: 're_rewritten', amount: 1_000_000 } });
        const answer = url.startsWith('/v1/') ? await world.agent('GET', url) : await world.as(fin, 'GET', url);
        answers.push([url, answer.statusCode, answer.statusCode === 200 ? null : answer.json().error.code]);
      } finally {
        await world.close();
      }
    }
    expect(answers).toEqual(routes.map(([url]) => [url, 503, 'journal_unavailable']));
   }, 45_000);
});

describe('nothing is sent while the journal stands failed', () => {
  let world: AppWorld;
  const delivered: string[] = [];
  const channels: Channels = {
    deliver: async (delivery) => {
      delivered.push(delivery.id);
      return { ok: true, status: 200, detail: 'ok' };
    },
  };
  beforeAll(async () => {
    const notifications = { ...testConfig().notifications, groups: { 'ap-leads': [{ kind: 'slack' as const, url: 'https://hooks.slack.example/T/B/ap' }] } };
    world = await buildAppWorld({ config: testConfig({ notifications }), channels });
  });
  afterAll(async () => world.close());

  it("the gate's dispatch and its recovery send no refund, the confirmation reconciler asks Stripe nothing, and the outbox tells nobody", async () => {
    const pi = await world.payment(50_000);
    // A refund sent and not confirmed yet: the reconciler would look it up.
    const sent = await world.agent('POST', '/v1/refunds', { request_id: 'sent-1', payment_intent: pi, amount: 1_000 });
    expect(sent.json().status).toBe('COMMITTED');
    // A refund whose process died after its DISPATCHED: recovery would send it.
    world.services.gate.killHook = (point) => {
      if (point === 'after_dispatch') throw new SimulatedCrash('the process died before the refund call');
    };
    const inFlight = await world.agent('POST', '/v1/refunds', { request_id: 'in-flight-1', payment_intent: pi, amount: 2_000 });
    world.services.gate.killHook = undefined;
    expect(inFlight.json().status).toBe('IN_FLIGHT');
    // An item waiting for ap-leads: its team channel is owed a message, journaled and due.
    const waiting = await queued(world, 'waiting-1');
    expect(await world.services.outbox.plan()).toBeGreaterThan(0);
    expect(delivered).toEqual([]);

    journalFile(world.dir).forge(waiting);
    const ana = await world.login('ana');
    const inbox = await world.as(ana, 'GET', '/api/inbox');
    expect([inbox.statusCode, inbox.json().error.code]).toEqual([503, 'journal_unavailable']);
    const refunds = world.sandbox.refunds(pi).length;

    /** What came of a call: refused for the journal, or what it did. */
    const outcome = (call: Promise<unknown>) =>
      call.then(
        (value) => `ran: ${JSON.stringify(value instanceof Map ? [...value] : value)}`,
        (error: unknown) => (isJournalFailure(error) ? 'journal_unavailable' : `failed: ${String(error)}`),
      );
    const listed: string[] = [];
    const reconciler = new Reconciler({
      journal: world.services.journal,
      target: {
        listRefunds: async (paymentIntent) => {
          listed.push(paymentIntent);
          return [];
        },
      },
      candidates: () => [sent.json().effect_id],
      nowMs: () => world.clock.wallMs() + 3_600_000,
      afterMs: 0,
    });
    const asked = { id: 'asked-after', agent: 'support-bot', ...requestPayload({ payment_intent: pi, amount: 1_500 }) };
    expect({
      dispatch: await outcome(world.services.inbox.submit(asked)),
      recovery: await outcome(world.services.gate.recover({ candidates: [inFlight.json().effect_id] })),
      reconciler: await outcome(reconciler.runPass()),
      outbox: await outcome(world.services.outbox.deliverDue()),
    }).toEqual({ dispatch: 'journal_unavailable', recovery: 'journal_unavailable', reconciler: 'journal_unavailable', outbox: 'journal_unavailable' });
    await world.services.outbox.kick();
    await world.services.outbox.idle();

    expect(world.sandbox.refunds(pi)).toHaveLength(refunds);
    expect(listed).toEqual([]);
    expect(delivered).toEqual([]);
  });
});
