import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { workLeaseLimits } from '../../server/app/work-leases.ts';
import { freePort, type ServerProcess, startServerProcess, writeReceiptKey, writeTestConfig } from '../support/server-process.ts';

// Two server processes on one journal file: the SLA ticker's lease is held by one of them (each
// says so in its log when a lease comes to it), and when that one is killed (SIGKILL: it gives
// nothing back) the other takes the ticker once the lease lapses.

const dir = mkdtempSync(join(tmpdir(), 'interlock-leases-kill-'));
const servers: ServerProcess[] = [];
afterAll(async () => {
  for (const server of servers) server.child.kill('SIGKILL');
  await Promise.all(servers.map((s) => s.exited));
  rmSync(dir, { recursive: true, force: true });
});

/** True once the server logged that the SLA ticker runs on it. */
const ticks = (server: ServerProcess) => server.stdout().includes('background work sla-ticker runs on this server now');

describe('background work across server processes', () => {
  it('the SLA ticker runs on one server; killed, its ticker moves to the other within the lease TTL and a retry', async () => {
    const env = {
      DB_PATH: join(dir, 'shared.sqlite'),
      INTERLOCK_CONFIG: writeTestConfig(dir, { unpaced: true }),
      RECEIPT_KEY_PATH: writeReceiptKey(join(dir, 'receipt.pem')),
      SANDBOX_PORT: '0',
      LOG_LEVEL: 'info',
    };
    for (const name of ['one', 'two']) {
      servers.push(await startServerProcess({ ...env, PORT: String(await freePort()), DATA_DIR: join(dir, name) }, { logs: true }));
    }
    const startMs = performance.now();
    while (!servers.some(ticks) && performance.now() - startMs < 10_000) await sleep(100);
    expect(servers.filter(ticks)).toHaveLength(1);
    const holder = servers.find(ticks)!;
    const other = servers.find((server) => server !== holder)!;
    holder.child.kill('SIGKILL');
    await holder.exited;
    const killedMs = performance.now();
    const boundMs = workLeaseLimits.ttlMs + workLeaseLimits.retryMs + 2_000;
    while (!ticks(other) && performance.now() - killedMs < boundMs) await sleep(100);
    expect(ticks(other)).toBe(true);
    expect(other.stdout()).toMatch(/background work sla-ticker runs on this server now \(lease epoch 2\)/);
  }, 120_000);
});
