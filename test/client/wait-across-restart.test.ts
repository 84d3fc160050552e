import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createInterlockClient, type WaitResult } from '../../shared/client/index.ts';
import { type Sandbox, startSandbox } from '../../server/sandbox/index.ts';
import { AGENT_TOKEN } from '../support/app-world.ts';
import { clientFor, freePort, type ServerProcess, startServerProcess, writeTestConfig } from '../support/server-process.ts';

/**
 * An agent waiting for a person's decision with the typed client while the server is restarted
 * (SIGTERM, a deploy): the stop answers `503 not_ready` and then nothing listens for a moment.
 * Both say "ask again"; the wait reads again within its timeout and returns the decision made
 * after the restart, rather than throwing the restart at the agent.
 */

let sandbox: Sandbox;
let dir: string;
let server: ServerProcess | null = null;

beforeAll(async () => {
  sandbox = await startSandbox({ port: 0 });
  dir = mkdtempSync(join(tmpdir(), 'interlock-wait-restart-'));
}, 30_000);

afterAll(async () => {
  server?.child.kill('SIGKILL');
  await sandbox?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('waitForDecision across a server restart', () => {
  it('rides out the stop and the restart, and returns the approval made after it', async () => {
    const env = { PORT: String(await freePort()), DATA_DIR: join(dir, 'data'), INTERLOCK_CONFIG: writeTestConfig(dir), STRIPE_SANDBOX_URL: sandbox.url };
    server = await startServerProcess(env);
    const client = createInterlockClient({ baseUrl: server.url, token: AGENT_TOKEN });
    const payment = await sandbox.createPaymentIntent(10_000);
    const asked = await client.requestRefund({ request_id: 'wait-restart-1', payment_intent: payment.id, amount: 8_000 });
    expect(asked.answer).toMatchObject({ status: 'QUEUED', waiting_for: 'person' });

    const polls: string[] = [];
    const waited: Promise<WaitResult | Error> = client
      .waitForDecision('wait-restart-1', { timeoutMs: 60_000, onWait: ({ last }) => polls.push(last?.answer.status ?? 'none') })
      .catch((error: unknown) => error as Error);
    // The first read has answered QUEUED; then the deploy: stop, and start again on the same port and data.
    await new Promise((resolve) => setTimeout(resolve, 1_200));
    server.child.kill('SIGTERM');
    expect(await server.exited).toBe('0');
    server = await startServerProcess(env);
    // The same address the client waits on (a port taken meanwhile would move it, and the wait could not follow).
    expect(server.url).toBe(`http://127.0.0.1:${env.PORT}`);
    const api = clientFor(server.url);
    const item = (await api.as('ana', 'GET', `/api/items/${asked.answer.effect_id}`)).body.item as { escalation: string };
    const decided = await api.as('ana', 'POST', `/api/items/${asked.answer.effect_id}/decisions`, { action: 'approve', escalation: item.escalation });
    expect(decided.body.status).toBe('COMMITTED');

    const result = await waited;
    expect(result instanceof Error ? `${(result as { code?: string }).code}: ${result.message}` : result.answer.status).toBe('COMMITTED');
    expect(result).toMatchObject({ final: true, answer: { waiting_for: null } });
    expect(polls[0]).toBe('QUEUED');
  }, 120_000);

  it('a wait that never reached a server fails at once with network_error, not at its timeout', async () => {
    const nowhere = createInterlockClient({ baseUrl: `http://127.0.0.1:${await freePort()}`, token: AGENT_TOKEN });
    const startMs = performance.now();
    const error = await nowhere.waitForDecision('wait-restart-2', { timeoutMs: 30_000 }).catch((e: unknown) => e as { code?: string });
    expect((error as { code?: string }).code).toBe('network_error');
    expect(performance.now() - startMs).toBeLessThan(2_000);
  });
});
