import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { MemoryLeases } from '../../db/memory/leases.ts';
import { holderPlace, isDeadHolderHere, pidAlive, thisHost } from '../../server/app/lease-holders.ts';
import { WorkLeases } from '../../server/app/work-leases.ts';

// A lease held by a process of this host that is gone is taken over at once (server/app/
// work-leases.ts, server/app/lease-holders.ts); one held by a live process, or by another host's,
// waits for its TTL as before.

/** The pid of a process that ran and is gone. */
const deadPid = (): number => spawnSync(process.execPath, ['-e', '']).pid!;

describe('a lease held by a process of this host that is gone', () => {
  it('is told from a live holder, this process, another host and a name of another form', () => {
    const here = thisHost();
    const dead = deadPid();
    expect(holderPlace(`${here}:${dead}:abcd1234`)).toEqual({ host: here, pid: dead });
    expect(holderPlace('web-1:not-a-pid:abcd1234')).toBeNull();
    expect(pidAlive(dead)).toBe(false);
    expect(pidAlive(process.pid)).toBe(true);
    expect(isDeadHolderHere(`${here}:${dead}:abcd1234`)).toBe(true);
    expect(isDeadHolderHere(`${here}:${process.ppid}:abcd1234`)).toBe(false);
    expect(isDeadHolderHere(`${here}:${process.pid}:abcd1234`, here, () => false)).toBe(false);
    expect(isDeadHolderHere(`another-host:${dead}:abcd1234`)).toBe(false);
    expect(isDeadHolderHere('server-a')).toBe(false);
  });

  it('is taken over at once, the work lease and the alive one, at the next epoch; a live or foreign holder still waits', async () => {
    const store = new MemoryLeases();
    const here = thisHost();
    const dead = `${here}:${deadPid()}:dead0001`;
    await store.acquire('sla-ticker', dead, 60_000);
    await store.acquire('server-alive-0', dead, 60_000);
    await store.acquire('checkpoint-signing', `${here}:${process.ppid}:live0001`, 60_000);
    await store.acquire('pull-reconciler', `another-host:${deadPid()}:far00001`, 60_000);
    const restarted = new WorkLeases({ store });
    expect(await restarted.hold('sla-ticker')).toBe(true);
    expect(restarted.held('sla-ticker')).toMatchObject({ holder: restarted.holder, epoch: 2 });
    expect(await store.check('sla-ticker', dead, 1)).toBe(false);
    expect(await restarted.keepAliveLease()).toBe(1);
    expect(await store.heldNow('server-alive-0')).toMatchObject({ holder: restarted.holder, epoch: 2 });
    expect(await restarted.hold('checkpoint-signing')).toBe(false);
    expect(await restarted.hold('pull-reconciler')).toBe(false);
    await restarted.stop();
  });
});
