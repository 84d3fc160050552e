import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort, runServerToExit, type ServerProcess, startServerProcess, writeReceiptKey, writeTestConfig } from '../support/server-process.ts';

// Several processes may serve one journal (DB_PATH), each with a data folder of its own. Each
// signs the journal's checkpoints and, at start, holds the newest against its receipt key: so they
// must share that key (RECEIPT_KEY_PATH), and one with a key of its own refuses to start.

const dir = mkdtempSync(join(tmpdir(), 'interlock-shared-start-'));
const servers: ServerProcess[] = [];
afterAll(async () => {
  for (const server of servers) server.child.kill('SIGKILL');
  await Promise.all(servers.map((s) => s.exited));
  rmSync(dir, { recursive: true, force: true });
});

async function start(name: string, env: Record<string, string>): Promise<ServerProcess> {
  const server = await startServerProcess({ PORT: String(await freePort()), SANDBOX_PORT: '0', DATA_DIR: join(dir, name), ...env });
  servers.push(server);
  return server;
}

describe('processes on one journal', () => {
  it('with a receipt key each, the second refuses to start, naming the key; with one key between them, both serve', async () => {
    const config = writeTestConfig(dir, { unpaced: true });
    const own = { DB_PATH: join(dir, 'own.sqlite'), INTERLOCK_CONFIG: config };
    const first = await start('own-1', own);
    // A graceful stop signs a checkpoint of what the first served, with its key.
    first.child.kill('SIGTERM');
    await first.exited;
    const second = await runServerToExit({ PORT: String(await freePort()), SANDBOX_PORT: '0', DATA_DIR: join(dir, 'own-2'), ...own });
    expect(second.exit).toBe('2');
    expect(second.stderr).toContain('does not verify with the receipt key');

    const shared = { DB_PATH: join(dir, 'shared.sqlite'), INTERLOCK_CONFIG: config, RECEIPT_KEY_PATH: writeReceiptKey(join(dir, 'receipt.pem')) };
    const [a, b] = [await start('shared-1', shared), await start('shared-2', shared)];
    for (const server of [a, b]) expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
  }, 60_000);
});

describe('the test harness', () => {
  let holder: Server | undefined;
  afterAll(() => holder?.close());

  it('starts a server on new ports when the one it was given is taken before it listens', async () => {
    const taken = await freePort();
    holder = createServer();
    await new Promise<void>((resolve) => holder!.listen(taken, '127.0.0.1', resolve));
    const server = await start('port-taken', { INTERLOCK_CONFIG: writeTestConfig(dir, { unpaced: true }), PORT: String(taken) });
    expect(server.url).not.toBe(`http://127.0.0.1:${taken}`);
    expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
  }, 60_000);
});
