import { createServer, request, type Server } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Sandbox, startSandbox } from '../../server/sandbox/index.ts';
import { AGENT_TOKEN } from '../support/app-world.ts';
import { freePort, type ServerProcess, startServerProcess, writeTestConfig } from '../support/server-process.ts';

/**
 * SIGTERM while a read of a payment hangs at Stripe (no answer, the connection open): the server
 * still ends within the 25 s it promises, under systemd's TimeoutStopSec=30, rather than waiting
 * for Stripe's own 30 s timeout and being killed. Stripe is the sandbox behind a proxy that stops
 * answering reads of payments when told.
 */

const STOP_BOUND_MS = 25_000;

let sandbox: Sandbox;
let proxy: Server;
let proxyUrl: string;
let dir: string;
let server: ServerProcess | null = null;
/** Reads of payments from this count on get no answer. */
let hangFrom = Number.POSITIVE_INFINITY;
let paymentReads = 0;

beforeAll(async () => {
  sandbox = await startSandbox({ port: 0 });
  dir = mkdtempSync(join(tmpdir(), 'interlock-stop-hang-'));
  const target = new URL(sandbox.url);
  proxy = createServer((incoming, outgoing) => {
    if (incoming.method === 'GET' && incoming.url?.startsWith('/v1/payment_intents/')) {
      paymentReads += 1;
      if (paymentReads >= hangFrom) return; // never answered
    }
    const forward = request({ host: target.hostname, port: target.port, path: incoming.url, method: incoming.method, headers: incoming.headers }, (answer) => {
      outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(outgoing);
    });
    forward.on('error', () => outgoing.destroy());
    incoming.pipe(forward);
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  proxyUrl = `http://127.0.0.1:${(proxy.address() as { port: number }).port}`;
}, 30_000);

afterAll(async () => {
  server?.child.kill('SIGKILL');
  proxy?.closeAllConnections();
  proxy?.close();
  await sandbox?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('SIGTERM while Stripe does not answer a read', () => {
  it('the server ends within 25 s, exit 0', async () => {
    const env = { PORT: String(await freePort()), DATA_DIR: join(dir, 'data'), INTERLOCK_CONFIG: writeTestConfig(dir), STRIPE_SANDBOX_URL: proxyUrl };
    server = await startServerProcess(env);
    const payment = await sandbox.createPaymentIntent(10_000);
    // The request's own read is answered; every read of a payment after it hangs: the read of the
    // item its escalation makes for the approvers' page.
    hangFrom = paymentReads + 2;
    const answer = await fetch(`${server.url}/v1/refunds`, {
      method: 'POST',
      headers: { authorization: `Bearer ${AGENT_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ request_id: 'hang-1', payment_intent: payment.id, amount: 8_000 }),
    });
    expect(((await answer.json()) as { status: string }).status).toBe('QUEUED');
    const deadline = Date.now() + 10_000;
    while (paymentReads < hangFrom && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(paymentReads).toBeGreaterThanOrEqual(hangFrom);
    const signalMs = performance.now();
    server.child.kill('SIGTERM');
    const exit = await Promise.race([server.exited, new Promise<string>((resolve) => setTimeout(() => resolve('still running after 40 s'), 40_000))]);
    const stoppedMs = performance.now() - signalMs;
    if (exit !== 'still running after 40 s') server = null;
    expect({ exit, stoppedMs: Math.round(stoppedMs), within: stoppedMs < STOP_BOUND_MS }).toMatchObject({ exit: '0', within: true });
  }, 90_000);
});
