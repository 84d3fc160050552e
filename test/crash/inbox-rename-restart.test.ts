import { readFileSync, writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeCrashDir, type SandboxProcess, startSandboxProcess, stopCrashProcesses } from '../support/crash-harness.ts';
import { DEMO_PASSWORD } from '../support/app-world.ts';
import { clientFor, freePort, type ServerProcess, startServerProcess, writeTestConfig } from '../support/server-process.ts';

// A real server killed and started again with another `inbox_name` (a setting fixed at start):
// its ledger's JSON pages must be the ledger of the inbox it now runs, as its CSV is.

let sandbox: SandboxProcess;
let server: ServerProcess | null = null;

beforeAll(async () => {
  sandbox = await startSandboxProcess();
}, 60_000);

afterAll(async () => {
  server?.child.kill('SIGKILL');
  await stopCrashProcesses();
});

describe('a restart under another inbox_name', () => {
  it('answers the same rows in the JSON ledger as in its CSV', async () => {
    const dir = makeCrashDir('inbox-rename');
    const config = writeTestConfig(dir);
    const env = { PORT: String(await freePort()), DATA_DIR: dir, INTERLOCK_CONFIG: config, STRIPE_SANDBOX_URL: sandbox.url };
    server = await startServerProcess(env);
    let api = clientFor(server.url);
    const pi = (await sandbox.remote.createPaymentIntent(10_000)).id;
    expect((await api.agent('POST', '/v1/refunds', { request_id: 'rename-1', payment_intent: pi, amount: 1_000 })).status).toBe(200);
    expect(((await api.as('fin', 'GET', '/api/ledger')).body.rows as unknown[]).length).toBe(1);
    server.child.kill('SIGKILL');
    await server.exited;
    server = null;

    writeFileSync(config, readFileSync(config, 'utf8').replace(/^inbox_name: inbox$/m, 'inbox_name: refunds-eu'));
    server = await startServerProcess(env);
    api = clientFor(server.url);
    const csv = await (await fetchCsv(server.url)).text();
    const csvRows = csv.trim().split('\n').length - 1;
    const json = (await api.as('fin', 'GET', '/api/ledger')).body.rows as unknown[];
    expect(csvRows).toBe(0);
    expect(json.length).toBe(csvRows);
  }, 90_000);
});

/** The CSV as fin downloads it, with fin's session. */
async function fetchCsv(url: string): Promise<Response> {
  const login = await fetch(`${url}/api/session`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'fin', password: DEMO_PASSWORD }) });
  const cookie = String(login.headers.get('set-cookie')).split(';')[0]!;
  return fetch(`${url}/api/ledger.csv`, { headers: { cookie } });
}
