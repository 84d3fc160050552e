import { request } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Sandbox, startSandbox } from '../../server/sandbox/index.ts';
import { AGENT_TOKEN } from '../support/app-world.ts';
import { clientFor, freePort, type ServerProcess, startServerProcess, writeTestConfig } from '../support/server-process.ts';

/**
 * SIGTERM in the middle of a burst of routine refunds, to a real server process over real HTTP:
 * no request the client had written whole before the signal is cut off (a reset), every answer is
 * JSON of the contract (a refund answer, or `{"error":{"code","message"}}`), the process ends well
 * within systemd's TimeoutStopSec=30, and after a restart every request answered final is in the
 * journal as answered.
 */

const BURST = 60;
/** When the signal comes, in ms after the burst's first request: early, in the middle, late. */
const SIGNAL_AT_MS = [30, 250, 700];
/** The bound the server promises on answering what it took, under the unit's TimeoutStopSec=30. */
const STOP_BOUND_MS = 25_000;

let sandbox: Sandbox;
let dir: string;
let server: ServerProcess | null = null;

beforeAll(async () => {
  sandbox = await startSandbox({ port: 0 });
  dir = mkdtempSync(join(tmpdir(), 'interlock-stop-'));
}, 30_000);

afterAll(async () => {
  server?.child.kill('SIGKILL');
  await sandbox?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** How one request of the burst ended, as its client saw it. */
interface Outcome {
  id: string;
  /** When the client had written the whole request (ms, performance clock), or null. */
  writtenMs: number | null;
  status: number | null;
  body: string;
  requestId: string | null;
  /** The socket's error code (ECONNRESET, ECONNREFUSED), when no answer came. */
  error: string | null;
}

/** One routine refund on its own connection, as a burst of agents sends them. */
function send(url: string, id: string, paymentIntent: string): Promise<Outcome> {
  const outcome: Outcome = { id, writtenMs: null, status: null, body: '', requestId: null, error: null };
  const body = JSON.stringify({ request_id: id, payment_intent: paymentIntent, amount: 500 });
  return new Promise((resolve) => {
    const req = request(`${url}/v1/refunds`, {
      method: 'POST',
      agent: false,
      headers: { authorization: `Bearer ${AGENT_TOKEN}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
    });
    req.on('finish', () => (outcome.writtenMs = performance.now()));
    req.on('response', (res) => {
      outcome.status = res.statusCode ?? null;
      outcome.requestId = typeof res.headers['x-request-id'] === 'string' ? res.headers['x-request-id'] : null;
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (outcome.body += chunk));
      res.on('end', () => resolve(outcome));
      res.on('error', (error: NodeJS.ErrnoException) => resolve({ ...outcome, error: error.code ?? error.message }));
    });
    req.on('error', (error: NodeJS.ErrnoException) => resolve({ ...outcome, error: error.code ?? error.message }));
    req.end(body);
  });
}

/** What is wrong with an answer's body: not JSON, or neither a refund answer nor the error shape. */
function contractFault(outcome: Outcome): string | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(outcome.body);
  } catch {
    return `${outcome.status}: not JSON: ${outcome.body.slice(0, 120)}`;
  }
  const body = parsed as { status?: unknown; error?: { code?: unknown; message?: unknown } };
  if (outcome.status === 200 || outcome.status === 202) return typeof body.status === 'string' ? null : `${outcome.status}: no status: ${outcome.body.slice(0, 120)}`;
  if (typeof body.error?.code === 'string' && typeof body.error.message === 'string') return null;
  return `${outcome.status}: not the error shape: ${outcome.body.slice(0, 120)}`;
}

describe('SIGTERM during a burst of routine refunds', () => {
  for (const [round, signalAtMs] of SIGNAL_AT_MS.entries()) {
    it(`at ${signalAtMs} ms: nothing taken is cut off, every answer is the contract's, what was final is journaled`, async () => {
      const env = { PORT: String(await freePort()), DATA_DIR: join(dir, `data-${round}`), INTERLOCK_CONFIG: writeTestConfig(dir), STRIPE_SANDBOX_URL: sandbox.url };
      server = await startServerProcess(env);
      const payments = await Promise.all(Array.from({ length: BURST }, () => sandbox.createPaymentIntent(10_000)));
      const startMs = performance.now();
      const burst = Promise.all(payments.map((payment, i) => send(server!.url, `stop-${round}-${i}`, payment.id)));
      await new Promise((resolve) => setTimeout(resolve, signalAtMs));
      const signalMs = performance.now();
      server.child.kill('SIGTERM');
      const [outcomes, exit] = await Promise.all([burst, server.exited]);
      const stoppedMs = performance.now() - signalMs;
      server = null;

      const cutOff = outcomes.filter((o) => o.error !== null && o.writtenMs !== null && o.writtenMs < signalMs);
      const answered = outcomes.filter((o) => o.status !== null);
      const summary = {
        signalAtMs: Math.round(signalMs - startMs),
        answered: answered.length,
        final: answered.filter((o) => o.status === 200).length,
        waiting: answered.filter((o) => o.status === 202).length,
        refused: answered.filter((o) => o.status !== 200 && o.status !== 202).map((o) => o.status),
        errors: outcomes.filter((o) => o.error !== null).map((o) => `${o.error}${o.writtenMs !== null && o.writtenMs < signalMs ? ' (written before the signal)' : ''}`),
      };
      expect(cutOff.map((o) => `${o.id}: ${o.error}`), JSON.stringify(summary)).toEqual([]);
      expect(answered.map(contractFault).filter((fault) => fault !== null), JSON.stringify(summary)).toEqual([]);
      expect(answered.filter((o) => o.requestId === null).map((o) => `${o.id}: ${o.status}`)).toEqual([]);
      expect(exit).toBe('0');
      expect(stoppedMs).toBeLessThan(STOP_BOUND_MS);

      // Restarted on the same data folder: each request answered final is journaled as answered.
      server = await startServerProcess(env);
      const api = clientFor(server.url);
      for (const outcome of answered.filter((o) => o.status === 200)) {
        const told = JSON.parse(outcome.body) as { status: string };
        const now = await api.agent('GET', `/v1/refunds/${outcome.id}`);
        expect({ id: outcome.id, status: now.body.status }).toEqual({ id: outcome.id, status: told.status });
      }
      server.child.kill('SIGTERM');
      await server.exited;
      server = null;
    }, 120_000);
  }
});
