import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ReconciliationRunDetail } from '../../shared/api.ts';
import { AppClock } from '../../server/app/clock.ts';
import { type Sandbox, startSandbox } from '../../server/sandbox/index.ts';
import { EFFECT_METADATA_KEY } from '../../server/targets/stripe-refunds.ts';
import { type AppWorld, buildAppWorld } from '../support/app-world.ts';

// The attack: a refund the journal recorded as COMMITTED that Stripe no longer lists (missing in
// Stripe), masked by another refund on the same payment carrying its effect id in the metadata.
// The journal names the refund it sent (re_…), yet the run took the first refund listed under the
// effect id when the named one was not there: the stand-in was "matched" at the same amount and
// the missing refund never shown.

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
const T0 = Date.UTC(2026, 5, 8);

let dir: string;
let file: string;
let sandbox: Sandbox;
let world: AppWorld;
let nowMs = T0 + HOUR_MS;
let sent = '';
let standIn = '';
let effectId = '';

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'interlock-reconcile-masked-'));
  file = join(dir, 'sandbox.sqlite');
  sandbox = await startSandbox({ file, clockMs: () => nowMs });
  world = await buildAppWorld({ sandbox, clock: new AppClock(() => nowMs) });
  const paymentIntent = await world.payment(10_000);
  const answer = await world.agent('POST', '/v1/refunds', { request_id: 'masked-1', payment_intent: paymentIntent, amount: 1_000 });
  expect(answer.json().status).toBe('COMMITTED');
  effectId = answer.json().effect_id;
  sent = answer.json().refund;
  nowMs = T0 + 2 * HOUR_MS;
  standIn = (await sandbox.stripe().refunds.create({ payment_intent: paymentIntent, amount: 1_000, metadata: { [EFFECT_METADATA_KEY]: effectId } })).id;
  const { port } = sandbox;
  await sandbox.close();
  const db = new Database(file);
  expect(db.prepare('DELETE FROM objects WHERE id = ?').run(sent).changes).toBe(1);
  db.close();
  sandbox = await startSandbox({ file, port, clockMs: () => nowMs });
  nowMs = T0 + 3 * DAY_MS;
}, 60_000);

afterAll(async () => {
  await world?.close();
  await sandbox?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('a missing refund and a stand-in under its effect id', () => {
  it('is missing in Stripe, and the stand-in unrecorded, never matched', async () => {
    const fin = await world.login('fin');
    const started = await world.as(fin, 'POST', '/api/reconciliation', { from_ms: T0, to_ms: T0 + DAY_MS });
    expect(started.statusCode, started.body).toBe(202);
    let run: ReconciliationRunDetail = started.json();
    for (let i = 0; i < 200 && run.state === 'running'; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      run = (await world.as(fin, 'GET', `/api/reconciliation/${run.id}`)).json();
    }
    expect(run.state, run.error ?? '').toBe('done');
    expect(run.counts).toMatchObject({ matched: 0, missing_in_stripe: 1, unrecorded: 1 });
    expect(run.result!.missing_in_stripe.rows.map((row) => [row.effect_id, row.journal_refund])).toEqual([[effectId, sent]]);
    expect(run.result!.unrecorded.rows.map((row) => [row.effect_id, row.stripe_refund])).toEqual([[effectId, standIn]]);
  });
});
