import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import Database from 'better-sqlite3';
import Stripe from 'stripe';
import { afterAll, describe, expect, it, onTestFinished } from 'vitest';
import { connectSandbox, SandboxError, startSandbox } from '../../server/sandbox/index.ts';
import { manualClock, rejectionOf } from './support.ts';
import { compiledEntry } from '../support/server-process.ts';

const dir = mkdtempSync(join(tmpdir(), 'interlock-sandbox-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const REPO_ROOT = new URL('../../', import.meta.url);

/** Run `server/sandbox/main.ts` as its own process; resolves with its URL once it prints ready. */
async function spawnSandbox(file: string, env: Record<string, string> = {}): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, ['--enable-source-maps', compiledEntry('sandbox')], {
    cwd: REPO_ROOT,
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', SANDBOX_FILE: file, SANDBOX_SETTLE: 'manual', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  onTestFinished(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  const lines = createInterface({ input: child.stdout! });
  const first = await new Promise<string>((resolve, reject) => {
    lines.once('line', resolve);
    child.once('exit', (code) => reject(new Error(`sandbox exited with ${code} before it was ready`)));
  });
  const ready = JSON.parse(first) as { ready: boolean; url: string };
  expect(ready.ready).toBe(true);
  return { child, url: ready.url };
}

function exitOf(child: ChildProcess): Promise<{ code: number | null; signal: string | null }> {
  if (child.exitCode !== null || child.signalCode !== null) {
    return Promise.resolve({ code: child.exitCode, signal: child.signalCode });
  }
  return new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
}

describe('sandbox durable state', () => {
  it('with a file, refunds, keys and the clock survive a restart of the sandbox', async () => {
    const file = join(dir, 'restart.sqlite');
    const clock = manualClock();
    const before = await startSandbox({ file, settle: 'manual', clockMs: clock.nowMs });
    const intent = await before.createPaymentIntent(5000);
    const params = { payment_intent: intent.id, amount: 1000, metadata: { effect_id: 'eff_r' } };
    const refund = await before.stripe().refunds.create(params, { idempotencyKey: 'restart-key' });
    const byHand = before.handRefund(intent.id, 500);
    before.settle(byHand.id);
    before.openDispute(intent.id);
    before.advanceClock(3_600_000);
    await before.close();

    const after = await startSandbox({ file, settle: 'manual', clockMs: clock.nowMs });
    onTestFinished(() => after.close());
    expect(after.refunds(intent.id).map((r) => [r.id, r.status, r.metadata])).toEqual([
      [refund.id, 'pending', { effect_id: 'eff_r' }],
      [byHand.id, 'succeeded', {}],
    ]);
    expect(after.nowMs()).toBe(clock.nowMs() + 3_600_000);
    const replay = await after.stripe().refunds.create(params, { idempotencyKey: 'restart-key' });
    expect(replay.id).toBe(refund.id);
    expect(replay.lastResponse.headers['idempotent-replayed']).toBe('true');
    const charge = await after.stripe().charges.retrieve(intent.latest_charge as string);
    expect(charge).toMatchObject({ amount_refunded: 1500, disputed: true });
  });

  it('a dispute keeps how far it moved across a restart; one from a file written before disputes moved is open, needing a response', async () => {
    const file = join(dir, 'disputes.sqlite');
    const before = await startSandbox({ file });
    const reviewed = before.openDispute((await before.createPaymentIntent(5000)).id);
    before.moveDispute(reviewed.id, 'under_review');
    const older = before.openDispute((await before.createPaymentIntent(3000)).id);
    await before.close();
    // As an older sandbox wrote it: a dispute with no status and no evidence flag.
    const db = new Database(file);
    const row = db.prepare<[string], { json: string }>('SELECT json FROM objects WHERE id = ?').get(older.id)!;
    const { status: _status, evidenceSubmitted: _evidence, ...bare } = JSON.parse(row.json) as Record<string, unknown>;
    db.prepare('UPDATE objects SET json = ? WHERE id = ?').run(JSON.stringify(bare), older.id);
    db.close();

    const after = await startSandbox({ file });
    onTestFinished(() => after.close());
    expect(await after.stripe().disputes.retrieve(reviewed.id)).toMatchObject({ status: 'under_review', evidence_details: { has_evidence: true } });
    expect(await after.stripe().disputes.retrieve(older.id)).toMatchObject({ status: 'needs_response', evidence_details: { has_evidence: false } });
    expect(after.moveDispute(older.id, 'won')).toMatchObject({ status: 'won' });
  });

  it('without a file, a new sandbox starts empty', async () => {
    const first = await startSandbox();
    const intent = await first.createPaymentIntent(100);
    await first.close();
    const second = await startSandbox();
    onTestFinished(() => second.close());
    expect(second.refunds()).toEqual([]);
    const missing = await rejectionOf(second.stripe().paymentIntents.retrieve(intent.id));
    expect(missing.statusCode).toBe(404);
  });

  it('main.ts: a refund committed before a dropped answer survives SIGKILL of the sandbox process', async () => {
    const file = join(dir, 'process.sqlite');
    const first = await spawnSandbox(file);
    const remote = connectSandbox(first.url);
    expect(await remote.health()).toMatchObject({ ok: true });
    const intent = await remote.createPaymentIntent(5000);
    await remote.setFault({ on: 'refund_create', action: 'drop_after_commit', times: 2 });
    const params = { payment_intent: intent.id, amount: 2500, metadata: { effect_id: 'eff_kill' } };
    const lost = await rejectionOf(remote.stripe().refunds.create(params, { idempotencyKey: 'kill-key' }));
    expect(lost).toBeInstanceOf(Stripe.errors.StripeConnectionError);
    first.child.kill('SIGKILL');
    expect((await exitOf(first.child)).signal).toBe('SIGKILL');

    const second = await spawnSandbox(file);
    const again = connectSandbox(second.url);
    const ledger = await again.refunds(intent.id);
    expect(ledger.map((refund) => [refund.amount, refund.metadata])).toEqual([[2500, { effect_id: 'eff_kill' }]]);
    const replay = await again.stripe().refunds.create(params, { idempotencyKey: 'kill-key' });
    expect(replay.id).toBe(ledger[0]!.id);
    second.child.kill('SIGTERM');
    expect(await exitOf(second.child)).toEqual({ code: 0, signal: null });
  });

  it('control routes: the remote client drives a sandbox process like the in-process one', async () => {
    const { url } = await spawnSandbox(join(dir, 'control.sqlite'));
    const remote = connectSandbox(url);
    const intent = await remote.createPaymentIntent(4000);
    const byHand = await remote.handRefund(intent.id, 1000);
    expect(byHand).toMatchObject({ object: 'refund', amount: 1000, status: 'pending', metadata: {} });
    expect((await remote.settle(byHand.id, 'failed', 'lost_or_stolen_card'))[0]).toMatchObject({
      status: 'failed',
      failure_reason: 'lost_or_stolen_card',
    });
    const nowMs = (await remote.health()).nowMs;
    expect(await remote.advanceClock(60_000)).toBeGreaterThanOrEqual(nowMs + 60_000);
    const dispute = await remote.openDispute(intent.id);
    expect(await remote.moveDispute(dispute.id, 'under_review')).toMatchObject({ id: dispute.id, status: 'under_review' });
    const refused = await rejectionOf(remote.handRefund(intent.id, 100));
    expect(refused).toBeInstanceOf(SandboxError);
    expect(refused).toMatchObject({ statusCode: 400, code: 'charge_disputed' });
    await remote.setFault({ on: 'refund_create', action: 'error_429' });
    await remote.clearFaults();
    expect(await remote.deliveries()).toEqual([]);
    await remote.webhooksIdle();
  });

  it('main.ts: SANDBOX_RATE_LIMITS sets the limits of a sandbox process, which the remote client reads, changes and counts', async () => {
    const { url } = await spawnSandbox(join(dir, 'limits.sqlite'), { SANDBOX_RATE_LIMITS: 'test' });
    const remote = connectSandbox(url);
    expect(await remote.settings()).toMatchObject({ rateLimits: 'test', settle: 'manual' });
    const intent = await remote.createPaymentIntent(4000);
    // On the wall clock: a burst of 60 at once is more than one second lets through, however slow the machine.
    const answers = await Promise.allSettled(Array.from({ length: 60 }, () => remote.stripe().paymentIntents.retrieve(intent.id)));
    const through = answers.filter((answer) => answer.status === 'fulfilled').length;
    expect(through).toBeLessThan(60);
    expect((await remote.requestCounts()).endpoints['GET /v1/payment_intents/:id']).toEqual({ through, rate_limited: 60 - through, lock_timeout: 0, unauthorized: 0, forbidden: 0 });
    await remote.resetRequestCounts();
    expect(await remote.configure({ rateLimits: 'off' })).toMatchObject({ rateLimits: 'off' });
    expect((await remote.requestCounts()).total.through).toBe(0);
  });

  it('main.ts: a SANDBOX_RATE_LIMITS it does not know stops the process, naming the variable', async () => {
    const child = spawn(process.execPath, ['--enable-source-maps', compiledEntry('sandbox')], {
      cwd: REPO_ROOT,
      env: { ...process.env, PORT: '0', SANDBOX_RATE_LIMITS: 'fast' },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    expect(await exitOf(child)).toEqual({ code: 2, signal: null });
    expect(stderr.trim()).toBe('sandbox: SANDBOX_RATE_LIMITS must be one of off, test, live, not "fast"');
  });
});
