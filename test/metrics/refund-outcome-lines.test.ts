import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DerivedRow, DerivedTables } from '../../db/port/derived.ts';
import { openStorage } from '../../db/sqlite-storage.ts';
import { AppClock } from '../../server/app/clock.ts';
import { signWebhook } from '../../server/confirm/signature.ts';
import { INBOX_VIEW } from '../../server/inbox/table.ts';
import { LEDGER_VIEW } from '../../server/ledger/table.ts';
import { type Sandbox, startSandbox } from '../../server/sandbox/index.ts';
import { EFFECT_METADATA_KEY } from '../../server/targets/stripe-refunds.ts';
import { type AppWorld, buildAppWorld, testConfig, WEBHOOK_SECRET } from '../support/app-world.ts';

// The refund outcome lines across a restart, on one SQLite file: one info line each time a
// request's status changes, none for a status that did not change (a duplicate webhook, a move
// up the chain, a first approval of two already told), nothing told again of what stood before
// the start, and a start that reads no request's row for them (what a chain stood at before it
// moves is the ledger's, so start-up does not grow with the requests ever made).

const MINUTE_MS = 60_000;

/** Pino's JSON lines, as the server writes them. */
function logSink(): { stream: Writable; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n')) if (line.trim() !== '') lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  return { stream, lines };
}

/** The derived tables, counting the closed rows of the inbox and the ledger each read answers. */
function countingTables(inner: DerivedTables): { tables: DerivedTables; closedRowsRead: () => number } {
  let closed = 0;
  const seen = (view: string, rows: readonly (DerivedRow | null)[]) => {
    if (view === INBOX_VIEW || view === LEDGER_VIEW) closed += rows.filter((row) => row !== null && !row.open).length;
  };
  const tables: DerivedTables = {
    cursor: () => inner.cursor(),
    advance: (batch) => inner.advance(batch),
    reset: (version) => inner.reset(version),
    digests: () => inner.digests(),
    marks: () => inner.marks(),
    newestMark: () => inner.newestMark(),
    snapshot: () => inner.snapshot(),
    async get(view, key) {
      const row = await inner.get(view, key);
      seen(view, [row]);
      return row;
    },
    async list(view, options) {
      const rows = await inner.list(view, options);
      seen(view, rows);
      return rows;
    },
  };
  return { tables, closedRowsRead: () => closed };
}

/** The default config with two approvers from $100.00, as four-eyes asks. */
function fourEyesConfig() {
  const config = testConfig();
  return { ...config, routes: config.routes.map((r) => (r.name === 'default' ? { ...r, twoApproversFrom: { usd: 10_000 } } : r)) };
}

describe('refund outcome lines across a restart', () => {
  let first: AppWorld;
  let second: AppWorld | undefined;
  let shared: { clock: AppClock; sandbox: Sandbox; dir: string };
  const firstLog = logSink();
  const secondLog = logSink();
  beforeAll(async () => {
    const clock = new AppClock();
    shared = { clock, sandbox: await startSandbox({ clockMs: () => clock.wallMs() }), dir: mkdtempSync(join(tmpdir(), 'interlock-outcomes-')) };
    first = await buildAppWorld({ ...shared, config: fourEyesConfig(), logger: { level: 'info', stream: firstLog.stream } });
  });
  afterAll(async () => {
    await second?.close();
    await shared.sandbox.close();
    rmSync(shared.dir, { recursive: true, force: true });
  });

  const outcomes = (lines: Array<Record<string, unknown>>) =>
    lines.filter((line) => typeof line.msg === 'string' && line.msg.startsWith('refund ')).map((line) => `${line.request_id} ${line.status}`);
  /**
   * The lines but a QUEUED of a request the rules sent at once: a catch-up may come between its
   * request and the rules' answer (two appends), while the chain stands QUEUED, and then tells it;
   * whether one comes there is the machine's timing, not the watch's.
   */
  const routineQueued = /^(routine-\d|after-1) QUEUED$/;
  /**
   * So with an APPROVED of a request a person's approval sent at once: a catch-up may come between
   * the decision and its send, while the chain stands APPROVED (a fresh clone's run on a loaded
   * machine told `four-1 APPROVED`). Told or not, no status may be told twice: checked here.
   */
  const approvedThenSent = /^(person-1|four-1) APPROVED$/;
  const settled = (lines: Array<Record<string, unknown>>) => {
    const told = outcomes(lines);
    expect(new Set(told).size, `a status told twice: ${told.join(', ')}`).toBe(told.length);
    return told.filter((line) => !routineQueued.test(line) && !approvedThenSent.test(line));
  };

  async function ask(world: AppWorld, requestId: string, amount: number, paymentIntent?: string) {
    const pi = paymentIntent ?? (await world.payment(50_000));
    const answer = (await world.agent('POST', '/v1/refunds', { request_id: requestId, payment_intent: pi, amount })).json();
    return { pi, effectId: answer.effect_id as string, status: answer.status as string };
  }

  async function approve(world: AppWorld, who: string, effectId: string) {
    const me = await world.login(who);
    const escalation = (await world.as(me, 'GET', `/api/items/${effectId}`)).json().item.escalation as string;
    return (await world.as(me, 'POST', `/api/items/${effectId}/decisions`, { action: 'approve', escalation })).json().status as string;
  }

  /** Stripe posts refund.updated (succeeded) for the request's refund, signed; `id` tells the event apart. */
  async function confirm(world: AppWorld, paymentIntent: string, effectId: string, id: string) {
    const ours = world.sandbox.refunds(paymentIntent).find((r) => r.metadata?.[EFFECT_METADATA_KEY] === effectId);
    if (ours === undefined) throw new Error(`no refund sent for ${effectId}`);
    const { lastResponse: _response, ...object } = (await world.sandbox.stripe().refunds.retrieve(ours.id)) as unknown as Record<string, unknown>;
    const created = Math.floor(world.clock.wallMs() / 1000);
    const body = JSON.stringify({ id, object: 'event', type: 'refund.updated', livemode: false, created, data: { object } });
    const headers = { 'content-type': 'application/json', 'stripe-signature': signWebhook(body, WEBHOOK_SECRET, created) };
    const delivered = await world.app.inject({ method: 'POST', url: '/webhooks/stripe', headers, payload: body });
    expect(delivered.statusCode).toBe(200);
  }

  it('tells each change of status once, before and after a restart that reads no closed request', async () => {
    // Closed requests: sent under the rules, then confirmed by Stripe (one of them twice).
    const routine: Array<{ pi: string; effectId: string }> = [];
    for (const n of [1, 2, 3, 4]) {
      const asked = await ask(first, `routine-${n}`, 1_000);
      expect(asked.status).toBe('COMMITTED');
      routine.push(asked);
    }
    for (const [n, { pi, effectId }] of routine.slice(0, 3).entries()) await confirm(first, pi, effectId, `evt_routine_${n}`);
    await confirm(first, routine[0]!.pi, routine[0]!.effectId, 'evt_routine_0_again');
    // A person's: queued, approved and sent, confirmed.
    const person = await ask(first, 'person-1', 9_000);
    expect(person.status).toBe('QUEUED');
    expect(await approve(first, 'ana', person.effectId)).toBe('COMMITTED');
    await confirm(first, person.pi, person.effectId, 'evt_person_1');
    // Open at the restart: a four-eyes request with its first approval, and one left waiting.
    const four = await ask(first, 'four-1', 15_000);
    expect(await approve(first, 'ana', four.effectId)).toBe('PARTLY_APPROVED');
    const waiting = await ask(first, 'waiting-1', 9_500);
    await first.services.views.current();
    expect(settled(firstLog.lines)).toEqual([
      'routine-1 COMMITTED',
      'routine-2 COMMITTED',
      'routine-3 COMMITTED',
      'routine-4 COMMITTED',
      'person-1 QUEUED',
      'person-1 COMMITTED',
      'four-1 QUEUED',
      'waiting-1 QUEUED',
    ]);
    await first.close();

    const storage = await openStorage({ file: join(shared.dir, 'interlock.sqlite') });
    try {
      const counted = countingTables(storage.derived);
      second = await buildAppWorld({ ...shared, config: fourEyesConfig(), derived: counted.tables, logger: { level: 'info', stream: secondLog.stream } });
      // Four closed requests in the tables, and none of their rows read to start.
      expect(counted.closedRowsRead()).toBe(0);

      // The second approval of two sends it: told. The waiting one moves up: still QUEUED, not told.
      expect(await approve(second, 'bea', four.effectId)).toBe('COMMITTED');
      shared.clock.advance(241 * MINUTE_MS);
      expect(await second.services.inbox.tick()).toEqual(new Map([[waiting.effectId, 'finance-manager']]));
      // Late confirmations of chains not in memory: one sent and never confirmed, one confirmed already.
      await confirm(second, routine[3]!.pi, routine[3]!.effectId, 'evt_routine_3');
      await confirm(second, routine[1]!.pi, routine[1]!.effectId, 'evt_routine_1_again');
      // A new request after the start.
      expect((await ask(second, 'after-1', 1_000)).status).toBe('COMMITTED');
      await second.services.views.current();
      expect(settled(secondLog.lines)).toEqual(['four-1 COMMITTED', 'after-1 COMMITTED']);
      const metrics = (await second.app.inject({ method: 'GET', url: '/metrics', remoteAddress: '127.0.0.1' })).body;
      expect(metrics).toContain('interlock_refund_requests_total{status="COMMITTED"} 2\n');
      const passing = outcomes(secondLog.lines).filter((line) => routineQueued.test(line)).length;
      expect(metrics).toContain(`interlock_refund_requests_total{status="QUEUED"} ${passing}\n`);
    } finally {
      await storage.close();
    }
  });
});
