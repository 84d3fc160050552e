import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { SqliteLeases } from '../../db/leases.ts';
import { AppClock } from '../../server/app/clock.ts';
import type { Services } from '../../server/app/services.ts';
import { workLeaseLimits } from '../../server/app/work-leases.ts';
import { type Sandbox, startSandbox } from '../../server/sandbox/sandbox.ts';
import { type AppWorld, buildAppWorld, testConfig } from '../support/app-world.ts';

// Two servers on one journal file, in one process, with their background work on: the SLA ticker
// runs on the one holding its lease, a due escalation is written once, and the work moves to the
// other server when the holder stops (at once: it gives its leases back) or dies (within the TTL).

const MINUTE_MS = 60_000;
const TICK_MS = 1_000;

/** A server of the pair, with the ticker passes it ran (counted at `inbox.tick`). */
interface Server {
  world: AppWorld;
  ticks: number;
}

const opened: Server[] = [];
const dirs: string[] = [];
let sandbox: Sandbox | null = null;

afterEach(async () => {
  for (const server of opened.splice(0)) await server.world.close().catch(() => {});
  await sandbox?.close();
  sandbox = null;
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** Two servers on one data folder's journal (and receipt key), one clock and one sandbox, ticking every second. */
async function twoServers(): Promise<{ a: Server; b: Server; dir: string; clock: AppClock }> {
  const dir = mkdtempSync(join(tmpdir(), 'interlock-leases-'));
  dirs.push(dir);
  const clock = new AppClock();
  sandbox = await startSandbox({ clockMs: () => clock.wallMs() });
  const config = { ...testConfig(), slaTickMs: TICK_MS };
  const start = async (): Promise<Server> => {
    const counted = { ticks: 0 };
    const count = (services: Services) => {
      const tick = services.inbox.tick.bind(services.inbox);
      services.inbox.tick = async () => {
        counted.ticks += 1;
        return tick();
      };
    };
    const world = await buildAppWorld({ dir, clock, sandbox: sandbox!, config, background: true, beforeStart: count });
    const server = Object.assign(counted, { world });
    opened.push(server);
    return server;
  };
  return { a: await start(), b: await start(), dir, clock };
}

/** Wait (polling every 50 ms) until `done`, at most `withinMs`: how long it took, or null. */
async function until(done: () => boolean, withinMs: number): Promise<number | null> {
  const startMs = performance.now();
  while (!done()) {
    if (performance.now() - startMs > withinMs) return null;
    await sleep(50);
  }
  return performance.now() - startMs;
}

const escalations = async (world: AppWorld, effectId: string) => (await world.services.journal.entries(effectId)).filter((entry) => entry.kind === 'ESCALATED').length;

describe('background work on two servers sharing one journal', () => {
  it('one server runs the SLA ticker; a due escalation is written once; the other takes over within a second of a graceful stop', async () => {
    const { a, b, clock } = await twoServers();
    expect(await until(() => a.ticks + b.ticks > 0, 5_000)).not.toBeNull();
    const [holder, other] = a.ticks > 0 ? [a, b] : [b, a];
    // Each lease of the work is held by exactly one of them.
    for (const name of ['sla-ticker', 'checkpoint-signing', 'pull-reconciler'] as const) {
      expect([a, b].filter((server) => server.world.services.workLeases.holds(name)).length, name).toBe(1);
    }
    const pi = await holder.world.payment(20_000);
    const posted = (await other.world.agent('POST', '/v1/refunds', { request_id: 'lease-sla', payment_intent: pi, amount: 15_000 })).json();
    expect(posted.status).toBe('QUEUED');
    const effectId = posted.effect_id as string;
    const before = await escalations(holder.world, effectId);
    clock.advance(241 * MINUTE_MS);
    const ticksAt = holder.ticks;
    // Three passes of the holder after the SLA came due: escalated once, by the holder alone.
    await until(() => holder.ticks >= ticksAt + 3, 10_000);
    expect(await escalations(holder.world, effectId)).toBe(before + 1);
    expect(await escalations(other.world, effectId)).toBe(before + 1);
    expect(other.ticks).toBe(0);
    // A graceful stop gives the leases back: the other server takes the ticker at its next try.
    await holder.world.close();
    opened.splice(opened.indexOf(holder), 1);
    const tookMs = await until(() => other.ticks > 0, 10_000);
    expect(tookMs).not.toBeNull();
    expect(tookMs!).toBeLessThan(workLeaseLimits.retryMs + TICK_MS + 1_000);
    for (const name of ['sla-ticker', 'checkpoint-signing', 'pull-reconciler'] as const) expect(other.world.services.workLeases.holds(name), name).toBe(true);
    // Nothing more was owed: the escalation stays written once.
    await until(() => other.ticks >= 3, 10_000);
    expect(await escalations(other.world, effectId)).toBe(before + 1);
  }, 40_000);

  it('the work of a holder that died (it stopped renewing, gave nothing back) moves within its TTL', async () => {
    const { a, b, dir } = await twoServers();
    expect(await until(() => a.ticks + b.ticks > 0, 5_000)).not.toBeNull();
    // Another server on the file, which takes the ticker's lease and then dies: it renews it no
    // more and gives nothing back.
    const dead = new SqliteLeases(join(dir, 'interlock.sqlite'));
    const holderOf = async () => [a, b].find((server) => server.world.services.workLeases.holds('sla-ticker'));
    const holder = (await holderOf())!;
    const lease = holder.world.services.workLeases.held('sla-ticker')!;
    // The holder lets its leases go (and asks for none again), so the dying server takes the ticker's.
    await holder.world.services.workLeases.stop();
    const diedAtMs = performance.now();
    expect(await dead.acquire('sla-ticker', 'dead-server', workLeaseLimits.ttlMs)).toMatchObject({ holder: 'dead-server', epoch: lease.epoch + 1 });
    const other = holder === a ? b : a;
    const ticksAt = other.ticks;
    await sleep(workLeaseLimits.ttlMs / 2);
    expect(other.ticks).toBe(ticksAt);
    expect(await until(() => other.ticks > ticksAt, workLeaseLimits.ttlMs)).not.toBeNull();
    const movedMs = performance.now() - diedAtMs;
    expect(movedMs).toBeLessThan(workLeaseLimits.ttlMs + workLeaseLimits.retryMs + TICK_MS);
    expect(other.world.services.workLeases.held('sla-ticker')!.epoch).toBe(lease.epoch + 2);
    await dead.close();
  }, 40_000);
});
