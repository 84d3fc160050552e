import { type ChildProcess, spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { expect, test } from '@playwright/test';
import { AGENT_TOKEN, inboxRow, logIn, uniqueId } from './journey-helpers.ts';

/**
 * Journey 6: the server is killed with SIGKILL in the middle of a send and restarted. This
 * journey runs its own server process (own ports, own data folder) so it can kill it; the people's
 * browsers stay open through the restart and reconnect by themselves.
 */
const PORT = Number(process.env.E2E_RESTART_PORT ?? 4183);
const SANDBOX_PORT = Number(process.env.E2E_RESTART_SANDBOX_PORT ?? 4184);
const URL = `http://127.0.0.1:${PORT}`;
const SANDBOX = `http://127.0.0.1:${SANDBOX_PORT}`;
const DATA_DIR = 'test-results/e2e-restart-data';

let server: ChildProcess | null = null;

async function startServer(extra: Record<string, string> = {}): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'server/main.ts'], {
    env: {
      ...process.env,
      PORT: String(PORT),
      HOST: '127.0.0.1',
      DATA_DIR,
      INTERLOCK_CONFIG: 'e2e/interlock.e2e.yaml',
      SANDBOX_PORT: String(SANDBOX_PORT),
      SANDBOX_DEMO: '0',
      LOG_LEVEL: 'warn',
      INTERLOCK_CLAIM_TTL_MS: '300',
      ...extra,
    },
    stdio: 'ignore',
  });
  // Up to 90 s: alone a start takes about 4 s, and 15-19 s with the two people's tabs open (their
  // reconnecting pages take a core in headless Chromium); beside the vitest suite on 2 cores, CI saw
  // the second start pass 30 s. What this journey proves is what comes back, not how fast.
  for (let i = 0; i < 900; i++) {
    if (child.exitCode !== null) throw new Error('the server exited before it was ready');
    try {
      if ((await fetch(`${URL}/readyz`)).ok) return child;
    } catch {
      // Not listening yet.
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('the server was not ready in 90 s');
}

test.afterAll(() => {
  server?.kill('SIGKILL');
});

test('6. the server is killed mid-flow and restarted: every inbox comes back as it was, and the refund is sent once', async ({ browser }) => {
  test.setTimeout(300_000);
  rmSync(DATA_DIR, { recursive: true, force: true });
  server = await startServer({ INTERLOCK_KILL_AT: 'after_dispatch' });
  const agent = await browser.newContext({ baseURL: URL });
  const ask = async (id: string) => {
    const payment = (await (await agent.request.post(`${SANDBOX}/_sandbox/payment-intents`, { data: { amountCents: 10_000 } })).json()) as { id: string };
    const answer = await agent.request.post('/v1/refunds', {
      data: { request_id: id, payment_intent: payment.id, amount: 8_000 },
      headers: { authorization: `Bearer ${AGENT_TOKEN}` },
    });
    expect(answer.status()).toBe(202);
    return { paymentIntent: payment.id, effectId: ((await answer.json()) as { effect_id: string }).effect_id };
  };
  const sent = uniqueId('j6-sent');
  const waiting = uniqueId('j6-waiting');
  const x = await ask(sent);
  await ask(waiting);

  const ana = await (await browser.newContext({ baseURL: URL })).newPage();
  const bea = await (await browser.newContext({ baseURL: URL })).newPage();
  await logIn(ana, 'ana');
  await logIn(bea, 'bea');
  for (const page of [ana, bea]) {
    await expect(inboxRow(page, sent)).toBeVisible();
    await expect(inboxRow(page, waiting)).toBeVisible();
  }

  // ana approves; the server dies right after the DISPATCHED is durable, before Stripe is called.
  await ana.goto(`/items/${x.effectId}`);
  await ana.getByRole('button', { name: 'Approve $80.00' }).click();
  const exited = new Promise<string | null>((resolve) => server!.once('exit', (_code, signal) => resolve(signal)));
  await ana.getByRole('dialog').getByRole('button', { name: 'Send $80.00 refund' }).click();
  expect(await exited).toBe('SIGKILL');
  await expect(bea.getByText(/reconnect/i).first()).toBeVisible({ timeout: 15_000 });

  server = await startServer();
  // bea's open tab reconnects by itself and shows what the journal says now: the approved item is
  // settled by recovery (sent once), the other is still waiting, exactly as before.
  await expect(inboxRow(bea, waiting)).toBeVisible({ timeout: 30_000 });
  await expect(inboxRow(bea, sent)).toHaveCount(0, { timeout: 30_000 });
  await ana.goto('/');
  await expect(inboxRow(ana, waiting)).toBeVisible();
  await expect(inboxRow(ana, sent)).toHaveCount(0);

  const ledger = (await (await agent.request.get(`${SANDBOX}/_sandbox/ledger?payment_intent=${x.paymentIntent}`)).json()) as { data: { amount: number }[] };
  expect(ledger.data.map((r) => r.amount)).toEqual([8_000]);
  const status = (await (await agent.request.get(`/v1/refunds/${sent}`, { headers: { authorization: `Bearer ${AGENT_TOKEN}` } })).json()) as { status: string };
  expect(status.status).toMatch(/^COMMITTED/);
  server.kill('SIGTERM');
});
