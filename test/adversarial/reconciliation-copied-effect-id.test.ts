import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ReconciliationRunDetail } from '../../shared/api.ts';
import { RECONCILIATION_CATEGORIES } from '../../shared/reconciliation.ts';
import { AppClock } from '../../server/app/clock.ts';
import { type Sandbox, startSandbox } from '../../server/sandbox/index.ts';
import { EFFECT_METADATA_KEY } from '../../server/targets/stripe-refunds.ts';
import { type AppWorld, buildAppWorld } from '../support/app-world.ts';

// The attack (or a careless operator in Stripe's dashboard): a refund made by hand, days after
// Interlock's own refund on the same payment, carrying that refund's `interlock_effect_id` in its
// metadata (copied from it). The period of the hand refund skipped it as ours, since the effect
// id is in the journal, yet did not compare it, since the journal's refund was recorded in another
// period; that period's run never listed it, five days past its edge. Money went out and no run
// showed it: not by_hand, not unrecorded, nowhere.

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
const T0 = Date.UTC(2026, 4, 11);

let dir: string;
let sandbox: Sandbox;
let world: AppWorld;
let nowMs = T0 - 5 * DAY_MS;
let effectId = '';
let copied = '';

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'interlock-reconcile-copied-'));
  sandbox = await startSandbox({ file: join(dir, 'sandbox.sqlite'), clockMs: () => nowMs });
  world = await buildAppWorld({ sandbox, clock: new AppClock(() => nowMs) });
  const paymentIntent = await world.payment(10_000);
  const answer = await world.agent('POST', '/v1/refunds', { request_id: 'copied-1', payment_intent: paymentIntent, amount: 1_000 });
  expect(answer.json().status).toBe('COMMITTED');
  effectId = answer.json().effect_id;
  nowMs = T0 + 2 * HOUR_MS;
  copied = (await sandbox.stripe().refunds.create({ payment_intent: paymentIntent, amount: 500, metadata: { [EFFECT_METADATA_KEY]: effectId } })).id;
  nowMs = T0 + 3 * DAY_MS;
}, 60_000);

afterAll(async () => {
  await world?.close();
  await sandbox?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function reconcile(fromMs: number): Promise<ReconciliationRunDetail> {
  const fin = await world.login('fin');
  const started = await world.as(fin, 'POST', '/api/reconciliation', { from_ms: fromMs, to_ms: fromMs + DAY_MS });
  expect(started.statusCode, started.body).toBe(202);
  for (let i = 0; i < 200; i++) {
    const run: ReconciliationRunDetail = (await world.as(fin, 'GET', `/api/reconciliation/${started.json().id}`)).json();
    if (run.state !== 'running') return run;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error('the run did not finish');
}

/** Where a Stripe refund is shown in a run: the categories naming it. */
const shownIn = (run: ReconciliationRunDetail, refundId: string) =>
  RECONCILIATION_CATEGORIES.filter((category) => run.result![category].rows.some((row) => row.stripe_refund === refundId));

describe('a refund by hand under a copied effect id', () => {
  it("is shown once, unrecorded, in its own period; the original's period still matches the original alone", async () => {
    const handPeriod = await reconcile(T0);
    expect(handPeriod.state, handPeriod.error ?? '').toBe('done');
    expect(shownIn(handPeriod, copied)).toEqual(['unrecorded']);
    expect(handPeriod.result!.unrecorded.rows.map((row) => [row.effect_id, row.stripe_amount])).toEqual([[effectId, 500]]);
    const original = await reconcile(T0 - 5 * DAY_MS);
    expect(original.state, original.error ?? '').toBe('done');
    expect(shownIn(original, copied)).toEqual([]);
    expect(original.counts).toMatchObject({ matched: 1, unrecorded: 0, by_hand: 0 });
  });
});
