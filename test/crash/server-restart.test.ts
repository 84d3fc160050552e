import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../db/open.ts';
import { GATE_KILL_POINTS } from '../../server/gate/kill-points.ts';
import { makeCrashDir, type SandboxProcess, startSandboxProcess, stopCrashProcesses } from '../support/crash-harness.ts';
import { clientFor, freePort, type ServerProcess, startServerProcess, writeTestConfig } from '../support/server-process.ts';

/** A real server process, killed with SIGKILL mid-day and restarted: the views and the money stay the same. */

let sandbox: SandboxProcess;
let env: Record<string, string>;
let dir: string;
let server: ServerProcess | null = null;

beforeAll(async () => {
  sandbox = await startSandboxProcess();
  dir = makeCrashDir('server');
  env = {
    PORT: String(await freePort()),
    DATA_DIR: dir,
    INTERLOCK_CONFIG: writeTestConfig(dir),
    STRIPE_SANDBOX_URL: sandbox.url,
    INTERLOCK_CLAIM_TTL_MS: '300',
  };
}, 60_000);

afterAll(async () => {
  server?.child.kill('SIGKILL');
  await stopCrashProcesses();
});

async function kill(): Promise<void> {
  if (!server) return;
  server.child.kill('SIGKILL');
  expect(await server.exited).toBe('SIGKILL');
  server = null;
}

async function restart(extra: Record<string, string> = {}): Promise<ReturnType<typeof clientFor>> {
  await kill();
  server = await startServerProcess({ ...env, ...extra });
  return clientFor(server.url);
}

/** Everything the people see, without the moving clock. */
async function views(api: ReturnType<typeof clientFor>) {
  // The time, and each item's current facts: a display cache read from Stripe when it likes, kept
  // apart from the views (what a restart must not change is what the journal says).
  const strip = (body: Record<string, unknown>) => {
    const { now_ms: _now, ...rest } = body;
    const items = Array.isArray(rest.items) ? rest.items.map((item: Record<string, unknown>) => ({ ...item, current: undefined })) : rest.items;
    return { ...rest, items };
  };
  const out: Record<string, unknown> = {};
  for (const name of ['ana', 'fm', 'cy']) {
    out[`${name}/inbox`] = strip((await api.as(name, 'GET', '/api/inbox')).body);
    out[`${name}/done`] = (await api.as(name, 'GET', '/api/done')).body;
    out[`${name}/closed`] = (await api.as(name, 'GET', '/api/closed')).body;
  }
  out.scoreboard = (await api.as('fin', 'GET', '/api/scoreboard')).body.board;
  return out;
}

function journalSize(): number {
  const database = openDatabase(`${dir}/interlock.sqlite`);
  try {
    return (database.sqlite.prepare('SELECT count(*) AS n FROM entries').get() as { n: number }).n;
  } finally {
    database.close();
  }
}

async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() > deadline) return value;
    await new Promise((r) => setTimeout(r, 200));
  }
}

describe('server restart', () => {
  it('after escalations, decisions, an SLA move, a repair and a rejection, a SIGKILL and restart change no view and write nothing', async () => {
    let api = await restart();
    const pay = async (cents: number) => (await sandbox.remote.createPaymentIntent(cents)).id;
    const post = async (id: string, pi: string, amount: number) => (await api.agent('POST', '/v1/refunds', { request_id: id, payment_intent: pi, amount })).body;
    expect((await post('routine', await pay(10_000), 2_000)).status).toBe('COMMITTED');
    const approved = await post('approved', await pay(10_000), 8_000);
    const approvedItem = (await api.as('ana', 'GET', `/api/items/${approved.effect_id}`)).body.item as { escalation: string };
    expect((await api.as('ana', 'POST', `/api/items/${approved.effect_id}/decisions`, { action: 'approve', escalation: approvedItem.escalation })).body.status).toBe('COMMITTED');
    const stalePi = await pay(10_000);
    const stale = await post('stale', stalePi, 8_000);
    await sandbox.remote.handRefund(stalePi, 3_000);
    const staleItem = (await api.as('ana', 'GET', `/api/items/${stale.effect_id}`)).body.item as { escalation: string };
    const refused = (await api.as('ana', 'POST', `/api/items/${stale.effect_id}/decisions`, { action: 'approve', escalation: staleItem.escalation })).body;
    expect(refused.status).toBe('REFUSED:stale_premise');
    const repairItem = (refused.item as { item: { escalation: string } }).item;
    expect((await api.as('ana', 'POST', `/api/items/${stale.effect_id}/decisions`, { action: 'repair', escalation: repairItem.escalation, repair_index: 0 })).body.status).toBe('COMMITTED');
    const slow = await post('slow', await pay(10_000), 9_000);
    await api.as('ana', 'POST', '/api/test/clock', { advance_ms: 4 * 3_600_000 + 1_000 });
    expect(((await api.as('fm', 'GET', `/api/items/${slow.effect_id}`)).body.item as { group: string }).group).toBe('finance-manager');
    const large = await post('large', await pay(40_000), 30_000);
    const largeItem = (await api.as('cy', 'GET', `/api/items/${large.effect_id}`)).body.item as { escalation: string };
    expect((await api.as('cy', 'POST', `/api/items/${large.effect_id}/decisions`, { action: 'reject', escalation: largeItem.escalation, reason: 'over the customer’s lifetime refunds' })).body.status).toBe('REJECTED');
    await post('waiting', await pay(10_000), 7_000);

    const before = await views(api);
    const ledger = await sandbox.remote.refunds();
    await kill();
    const entries = journalSize();
    const loggedIn = api;
    api = await restart();
    // The people stay logged in across the restart: their sessions are in the database.
    loggedIn.rebase(server!.url);
    expect(await views(loggedIn)).toEqual(before);
    // The test clock moved 4 h forward is still as far ahead after the restart (DATA_DIR/test-clock.json).
    const nowMs = (await loggedIn.as('ana', 'GET', '/api/inbox')).body.now_ms as number;
    expect(nowMs - Date.now()).toBeGreaterThanOrEqual(4 * 3_600_000);
    await kill();
    expect(journalSize()).toBe(entries);
    expect(await sandbox.remote.refunds()).toEqual(ledger);
  }, 60_000);

  it.each(GATE_KILL_POINTS.filter((p) => p !== 'recovery_resend'))('killed at %s while sending, a restart sends the refund exactly once', async (point) => {
    let api = await restart({ INTERLOCK_KILL_AT: point });
    const pi = (await sandbox.remote.createPaymentIntent(10_000)).id;
    const before = await views(api);
    await api.agent('POST', '/v1/refunds', { request_id: `kill-${point}`, payment_intent: pi, amount: 1_500 }).catch(() => null);
    expect(await server!.exited).toBe('SIGKILL');
    server = null;
    api = await restart();
    const settled = await until(
      () => api.agent('GET', `/v1/refunds/kill-${point}`),
      (r) => String(r.body.status).startsWith('COMMITTED') || r.body.status === 'REAPPLIED_AFTER_QUERY',
    );
    expect(settled.body.status).toMatch(/^(COMMITTED|COMMITTED_BY_RETRY|COMMITTED_ON_QUERY|REAPPLIED_AFTER_QUERY)$/);
    expect((await sandbox.remote.refunds(pi)).map((r) => r.amount)).toEqual([1_500]);
    const after = await views(api);
    // Only the scoreboard moved, by exactly this one routine refund.
    expect({ ...after, scoreboard: null }).toEqual({ ...before, scoreboard: null });
    expect((after.scoreboard as { requests: number }).requests).toBe((before.scoreboard as { requests: number }).requests + 1);
  }, 60_000);

  it('killed during the resend of a recovery, the next restart still sends exactly once', async () => {
    let api = await restart({ INTERLOCK_KILL_AT: 'after_dispatch' });
    const pi = (await sandbox.remote.createPaymentIntent(10_000)).id;
    await api.agent('POST', '/v1/refunds', { request_id: 'kill-resend', payment_intent: pi, amount: 1_200 }).catch(() => null);
    expect(await server!.exited).toBe('SIGKILL');
    server = null;
    await new Promise((r) => setTimeout(r, 400));
    await expect(startServerProcess({ ...env, INTERLOCK_KILL_AT: 'recovery_resend' })).rejects.toThrow(/exited before ready/);
    await new Promise((r) => setTimeout(r, 400));
    api = await restart();
    const settled = await until(() => api.agent('GET', '/v1/refunds/kill-resend'), (r) => String(r.body.status).startsWith('COMMITTED'));
    expect(settled.body.status).toMatch(/^COMMITTED/);
    expect((await sandbox.remote.refunds(pi)).map((r) => r.amount)).toEqual([1_200]);
  }, 60_000);
});
