import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ReconciliationRow, ReconciliationRunDetail } from '../../shared/api.ts';
import { RECONCILIATION_CATEGORIES, type ReconciliationCategory } from '../../shared/reconciliation.ts';
import { AppClock } from '../../server/app/clock.ts';
import { type Sandbox, startSandbox } from '../../server/sandbox/index.ts';
import { EFFECT_METADATA_KEY } from '../../server/targets/stripe-refunds.ts';
import { type AppWorld, buildAppWorld } from '../support/app-world.ts';

// Reconciliation against the real sandbox over HTTP, through the SDK: a journal and a Stripe with
// planted discrepancies (a refund by hand on a seen payment, a COMMITTED whose refund the sandbox
// no longer lists, an amount that differs, a refund Stripe then failed, refunds near the period's
// edges inside and outside the 24 h slack, a payment with more than 100 refunds), read by finance
// from GET /api/reconciliation.

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
/** The period compared: one day. */
const T0 = Date.UTC(2026, 2, 2);
const PERIOD = { from_ms: T0, to_ms: T0 + DAY_MS };

let dir: string;
let file: string;
let sandbox: Sandbox;
let world: AppWorld;
/** The wall clock Interlock stamps journal entries with, and the sandbox's clock (Stripe's `created`): moved apart on purpose. */
let wallMs = T0 - 3 * DAY_MS;
let stripeMs = T0 - 3 * DAY_MS;
const stripeClock = () => stripeMs;

/** Interlock's clock at `wall`, Stripe's at `wall + skewMs`. */
function at(wall: number, skewMs = 0): void {
  wallMs = wall;
  stripeMs = wall + skewMs;
}

/** An agent's refund through Interlock, sent under the rules: its effect id. */
async function interlockRefund(paymentIntent: string, amount: number, requestId: string, status = 'COMMITTED'): Promise<string> {
  const answer = await world.agent('POST', '/v1/refunds', { request_id: requestId, payment_intent: paymentIntent, amount });
  expect(answer.json().status, answer.body).toBe(status);
  return answer.json().effect_id;
}

/** The sandbox stopped, its SQLite store edited as a test would plant state, and started again on the same port. */
async function editStripeStore(edit: (db: Database.Database) => void): Promise<void> {
  const { port } = sandbox;
  await sandbox.close();
  const db = new Database(file);
  edit(db);
  db.close();
  sandbox = await startSandbox({ file, port, clockMs: stripeClock });
}

const planted: Record<string, string> = {};
const seen: Record<string, string> = {};
let unseenHandRefund = '';
const edgeHandRefunds: Record<'before' | 'inside' | 'after', string> = { before: '', inside: '', after: '' };
let manyHandRefunds: string[] = [];
let run: ReconciliationRunDetail;
let entriesBeforeRun = 0;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'interlock-reconcile-'));
  file = join(dir, 'sandbox.sqlite');
  sandbox = await startSandbox({ file, clockMs: stripeClock });
  world = await buildAppWorld({ sandbox, clock: new AppClock(() => wallMs) });
  for (const name of ['slackIn', 'slackOut', 'matched', 'missing', 'mismatch', 'failed', 'many', 'queued', 'end', 'after', 'unseen']) {
    seen[name] = await world.payment(10_000);
  }
  // 23 h before the period by Stripe's clock, recorded inside it: matched across the edge.
  at(T0 + 10 * 60_000, -(23 * HOUR_MS + 10 * 60_000));
  planted.slackIn = await interlockRefund(seen.slackIn!, 1_000, 'slack-in');
  // 25 h before: past the slack, so Stripe is not asked that far back.
  at(T0 + 20 * 60_000, -(25 * HOUR_MS + 20 * 60_000));
  planted.slackOut = await interlockRefund(seen.slackOut!, 1_100, 'slack-out');
  at(T0 + 2 * HOUR_MS);
  planted.matched = await interlockRefund(seen.matched!, 2_000, 'matched');
  at(T0 + 3 * HOUR_MS);
  planted.byHand = sandbox.handRefund(seen.matched!, 500).id;
  unseenHandRefund = sandbox.handRefund(seen.unseen!, 700).id;
  at(T0 + 4 * HOUR_MS);
  planted.missing = await interlockRefund(seen.missing!, 1_500, 'missing');
  at(T0 + 5 * HOUR_MS);
  planted.mismatch = await interlockRefund(seen.mismatch!, 2_500, 'mismatch');
  at(T0 + 5 * HOUR_MS + 30 * 60_000);
  planted.failed = await interlockRefund(seen.failed!, 1_500, 'failed');
  at(T0 + 6 * HOUR_MS);
  planted.many = await interlockRefund(seen.many!, 100, 'many');
  manyHandRefunds = Array.from({ length: 130 }, () => sandbox.handRefund(seen.many!, 1).id);
  // Over the rules' limit: it waits for a person, and nothing is COMMITTED.
  at(T0 + 7 * HOUR_MS);
  planted.queued = await interlockRefund(seen.queued!, 8_000, 'queued', 'QUEUED');
  await sandbox.stripe().refunds.create({ payment_intent: seen.queued!, amount: 300, metadata: { [EFFECT_METADATA_KEY]: planted.queued } });
  // Created by Stripe inside the period, recorded just after it: the next period's, matched there across its edge.
  at(T0 + DAY_MS + 30 * 60_000, -HOUR_MS);
  planted.end = await interlockRefund(seen.end!, 1_200, 'end');
  // Both sides after the period: another period's.
  at(T0 + DAY_MS + 2 * HOUR_MS);
  planted.after = await interlockRefund(seen.after!, 1_300, 'after');
  // Hand refunds on a seen payment, 1 h before, 1 h before the end of, and 1 h after the period.
  for (const [edge, ms] of [
    ['before', T0 - HOUR_MS],
    ['inside', T0 + DAY_MS - HOUR_MS],
    ['after', T0 + DAY_MS + HOUR_MS],
  ] as const) {
    stripeMs = ms;
    edgeHandRefunds[edge] = sandbox.handRefund(seen.slackIn!, 10 + edge.length).id;
  }
  const refundOf = (paymentIntent: string) => sandbox.refunds(paymentIntent).find((r) => r.metadata?.[EFFECT_METADATA_KEY] !== undefined)!.id;
  const missingRefund = refundOf(seen.missing!);
  const mismatchRefund = refundOf(seen.mismatch!);
  const failedRefund = refundOf(seen.failed!);
  await editStripeStore((db) => {
    // Stripe reports the refund failed after it was created (the card was closed): no money went back.
    const failed = "UPDATE objects SET json = json_set(json, '$.status', 'failed', '$.failureReason', 'expired_or_canceled_card') WHERE id = ?";
    expect(db.prepare(failed).run(failedRefund).changes).toBe(1);
    expect(db.prepare('DELETE FROM objects WHERE id = ?').run(missingRefund).changes).toBe(1);
    expect(db.prepare("UPDATE objects SET json = json_set(json, '$.amountCents', 2400) WHERE id = ?").run(mismatchRefund).changes).toBe(1);
  });

  at(T0 + 3 * DAY_MS);
  entriesBeforeRun = await world.entryCount();
  const fin = await world.login('fin');
  const started = await world.as(fin, 'POST', '/api/reconciliation', PERIOD);
  expect(started.statusCode, started.body).toBe(202);
  run = await finished(fin, started.json().id);
}, 60_000);

afterAll(async () => {
  await world?.close();
  await sandbox?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Read the run until it is no longer running. */
async function finished(who: { cookie: string; csrf: string }, runId: string): Promise<ReconciliationRunDetail> {
  for (let i = 0; i < 200; i++) {
    const answer = await world.as(who, 'GET', `/api/reconciliation/${runId}`);
    expect(answer.statusCode, answer.body).toBe(200);
    const body: ReconciliationRunDetail = answer.json();
    if (body.state !== 'running') return body;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`run ${runId} did not finish`);
}

const rowsOf = (category: ReconciliationCategory): ReconciliationRow[] => run.result![category].rows;
const effectsIn = (category: ReconciliationCategory) => rowsOf(category).map((row) => row.effect_id).sort();

describe('reconciliation with Stripe, against the sandbox', () => {
  it('finishes, every payment Interlock has seen listed, progress at total', () => {
    expect(run.state, run.error ?? '').toBe('done');
    expect(run.progress).toMatchObject({ phase: 'finished', payment_intents_done: 10, payment_intents_total: 10 });
    expect(run.started_by).toBe('fin');
  });

  it('matches refunds by the effect id in their metadata, across an edge within the 24 h slack', () => {
    expect(effectsIn('matched')).toEqual([planted.matched, planted.slackIn, planted.many].sort());
    expect(run.result!.matched.amounts).toEqual({ usd: 1_000 + 2_000 + 100 });
    const slackIn = rowsOf('matched').find((row) => row.effect_id === planted.slackIn)!;
    expect(slackIn.stripe_created_ms! < T0 && slackIn.journal_at_ms! >= T0).toBe(true);
    expect(slackIn).toMatchObject({ request_id: 'slack-in', agent: 'support-bot', journal_amount: 1_000, stripe_amount: 1_000, currency: 'usd' });
    expect(slackIn.stripe_refund).toBe(slackIn.journal_refund);
  });

  it('a COMMITTED whose refund Stripe no longer lists, and one whose refund lies past the slack, are missing in Stripe', () => {
    expect(effectsIn('missing_in_stripe')).toEqual([planted.missing, planted.slackOut].sort());
    const missing = rowsOf('missing_in_stripe').find((row) => row.effect_id === planted.missing)!;
    expect(missing).toMatchObject({ journal_amount: 1_500, stripe_refund: null, stripe_amount: null, currency: 'usd' });
    expect(missing.journal_refund).toMatch(/^re_/);
  });

  it('an amount that differs is an amount mismatch, with both amounts', () => {
    expect(rowsOf('amount_mismatch').map((row) => [row.effect_id, row.journal_amount, row.stripe_amount])).toEqual([[planted.mismatch, 2_500, 2_400]]);
  });

  it('refunds by hand on seen payments are listed with their Stripe id and amount, more than 100 on one payment read through every page', () => {
    const byHand = rowsOf('by_hand');
    expect(run.result!.by_hand.count).toBe(1 + 1 + 130);
    expect(byHand.map((row) => row.stripe_refund).sort()).toEqual([planted.byHand, edgeHandRefunds.inside, ...manyHandRefunds].sort());
    const dashboard = byHand.find((row) => row.stripe_refund === planted.byHand)!;
    expect(dashboard).toMatchObject({ payment_intent: seen.matched, stripe_amount: 500, effect_id: null, payment_items: [planted.matched] });
    expect(run.result!.by_hand.amounts).toEqual({ usd: 500 + (10 + 'inside'.length) + 130 });
  });

  it('a COMMITTED whose refund Stripe reports failed is failed at Stripe, never matched money', () => {
    expect(rowsOf('failed_at_stripe').map((row) => [row.effect_id, row.journal_amount, row.stripe_amount, row.stripe_status])).toEqual([
      [planted.failed, 1_500, 1_500, 'failed'],
    ]);
    expect(run.result!.failed_at_stripe.amounts).toEqual({ usd: 1_500 });
    expect(effectsIn('matched')).not.toContain(planted.failed);
  });

  it('a refund under our effect id that the journal never recorded as COMMITTED is unrecorded', () => {
    expect(rowsOf('unrecorded').map((row) => [row.effect_id, row.stripe_amount, row.journal_refund])).toEqual([[planted.queued, 300, null]]);
  });

  it('leaves out what lies outside the period on both sides, and payments Interlock never saw', () => {
    const everyRow = RECONCILIATION_CATEGORIES.flatMap(rowsOf);
    const named = new Set(everyRow.flatMap((row) => [row.effect_id, row.stripe_refund]));
    for (const absent of [planted.after, planted.end, edgeHandRefunds.before, edgeHandRefunds.after, unseenHandRefund]) expect(named.has(absent!)).toBe(false);
    expect(everyRow.some((row) => row.payment_intent === seen.unseen)).toBe(false);
    expect(run.counts).toEqual({ matched: 3, missing_in_stripe: 2, amount_mismatch: 1, by_hand: 132, unrecorded: 1, failed_at_stripe: 1 });
  });

  it('writes nothing to the journal: the result is kept apart', async () => {
    expect(await world.entryCount()).toBe(entriesBeforeRun);
  });
});

describe('GET and POST /api/reconciliation', () => {
  it("an approver may neither run nor read it: it compares every group's refunds with Stripe, and an approver reads their own groups only", async () => {
    const ana = await world.login('ana');
    for (const [method, url, body] of [
      ['GET', '/api/reconciliation', undefined],
      ['GET', `/api/reconciliation/${run.id}`, undefined],
      ['POST', '/api/reconciliation', { from_ms: T0 + DAY_MS, to_ms: T0 + 2 * DAY_MS }],
    ] as const) {
      const answer = await world.as(ana, method, url, body);
      expect([method, url, answer.statusCode, answer.json().error?.code]).toEqual([method, url, 403, 'forbidden']);
      expect(answer.body).not.toContain(planted.end);
    }
  });

  it('finance runs more and reads them; the list holds runs without their rows', async () => {
    const ana = await world.login('fin');
    const list = await world.as(ana, 'GET', '/api/reconciliation');
    expect(list.statusCode).toBe(200);
    const summary = list.json().runs.find((r: { id: string }) => r.id === run.id);
    expect(summary).toMatchObject({ id: run.id, state: 'done', counts: run.counts });
    expect(summary.result).toBeUndefined();
    const started = await world.as(ana, 'POST', '/api/reconciliation', { from_ms: T0 + DAY_MS, to_ms: T0 + 2 * DAY_MS });
    expect(started.statusCode).toBe(202);
    const second = await finished(ana, started.json().id);
    expect([second.state, second.started_by]).toEqual(['done', 'fin']);
    // The refund Stripe created before this period and the journal recorded in it matches across the start edge.
    expect(second.result!.matched.rows.map((row) => row.effect_id)).toEqual([planted.end, planted.after]);
    expect(second.result!.by_hand.rows.map((row) => row.stripe_refund)).toEqual([edgeHandRefunds.after]);
  });

  it('refuses a period that ends before it starts, one over the limit, an unknown field, no session and no CSRF token', async () => {
    const fin = await world.login('fin');
    const refused = async (body: object) => (await world.as(fin, 'POST', '/api/reconciliation', body)).json().error.code;
    expect(await refused({ from_ms: T0, to_ms: T0 })).toBe('validation_failed');
    expect(await refused({ from_ms: T0, to_ms: T0 + 400 * DAY_MS })).toBe('validation_failed');
    expect(await refused({ from_ms: T0, to_ms: T0 + DAY_MS, extra: 1 })).toBe('validation_failed');
    expect(await refused({ from_ms: String(T0), to_ms: T0 + DAY_MS })).toBe('validation_failed');
    const anonymous = await world.app.inject({ method: 'POST', url: '/api/reconciliation', payload: PERIOD });
    expect(anonymous.statusCode).toBe(401);
    const noCsrf = await world.app.inject({ method: 'POST', url: '/api/reconciliation', payload: PERIOD, headers: { cookie: fin.cookie } });
    expect(noCsrf.json().error.code).toBe('csrf_failed');
    expect((await world.app.inject({ method: 'GET', url: '/api/reconciliation' })).statusCode).toBe(401);
  });

  it('answers 404 for a run it does not hold, and 400 for something that is not a run id', async () => {
    const fin = await world.login('fin');
    expect((await world.as(fin, 'GET', '/api/reconciliation/rec_0000000000000000')).json().error.code).toBe('not_found');
    expect((await world.as(fin, 'GET', '/api/reconciliation/nope')).json().error.code).toBe('validation_failed');
  });
});
