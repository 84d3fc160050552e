import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { SqliteLeases } from '../../db/leases.ts';
import { freePort, type ServerProcess, startServerProcess, writeReceiptKey, writeTestConfig } from '../support/server-process.ts';

// A server killed (SIGKILL: it gives nothing back) and started again on the same host and journal
// file takes its dead self's leases over at once, rather than waiting out their TTL (10 s).

const dir = mkdtempSync(join(tmpdir(), 'interlock-leases-restart-'));
const servers: ServerProcess[] = [];
afterAll(async () => {
  for (const server of servers) server.child.kill('SIGKILL');
  await Promise.all(servers.map((s) => s.exited));
  rmSync(dir, { recursive: true, force: true });
});

const TICKS = 'background work sla-ticker runs on this server now';

/** Wait until `server` logged that the SLA ticker runs on it, at most `withinMs`: how long it took. */
async function ticksWithin(server: ServerProcess, withinMs: number): Promise<number> {
  const startMs = performance.now();
  while (!server.stdout().includes(TICKS) && performance.now() - startMs < withinMs) await sleep(20);
  return performance.now() - startMs;
}

describe('a server killed and started again on the same host', () => {
  it('runs its SLA ticker within 2 s of being ready, taking its dead self’s lease at the next epoch', async () => {
    const env = {
      DB_PATH: join(dir, 'journal.sqlite'),
      DATA_DIR: join(dir, 'data'),
      INTERLOCK_CONFIG: writeTestConfig(dir, { unpaced: true }),
      RECEIPT_KEY_PATH: writeReceiptKey(join(dir, 'receipt.pem')),
      SANDBOX_PORT: '0',
      LOG_LEVEL: 'info',
    };
    const first = await startServerProcess({ ...env, PORT: String(await freePort()) }, { logs: true });
    servers.push(first);
    await ticksWithin(first, 10_000);
    expect(first.stdout()).toContain(`${TICKS} (lease epoch 1)`);
    first.child.kill('SIGKILL');
    await first.exited;
    // When the dead server's lease would lapse, on the machine's clock (the leases' on SQLite).
    const leases = new SqliteLeases(env.DB_PATH);
    const lapsesAtMs = (await leases.heldNow('sla-ticker'))!.expiresMs;
    await leases.close();
    const again = await startServerProcess({ ...env, PORT: String(await freePort()) }, { logs: true });
    servers.push(again);
    const readyAtMs = Date.now();
    const tookMs = await ticksWithin(again, 10_000);
    expect(again.stdout()).toContain(`${TICKS} (lease epoch 2)`);
    expect(tookMs).toBeLessThan(2_000);
    // Taken over while the dead lease still stood (its log line's time), not once it lapsed: told
    // apart whenever the server was ready before then.
    const line = again.stdout().split('\n').find((text) => text.includes(TICKS))!;
    const takenAtMs = (JSON.parse(line) as { time: number }).time;
    if (readyAtMs + 500 < lapsesAtMs) expect(takenAtMs).toBeLessThan(lapsesAtMs);
  }, 60_000);
});
