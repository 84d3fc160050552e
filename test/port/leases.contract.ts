import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'vitest';
import type { HeldLease, Leases } from '../../db/port/leases.ts';
import type { ContractCase } from './contract.ts';

// What every lease store does (db/port/leases.ts): a lease is held by one holder at a time, renewed
// by it at the same epoch, taken by another only once it is given back or expired, at a higher
// epoch; a holder whose lease moved fails its check. Times are real (PostgreSQL's clock is its
// own), so TTLs here are short and waits are bounded.

export interface LeasesEnv {
  store: Leases;
  /** Another connection onto the same store (another server's view of it). */
  other(): Leases;
}

/** Long enough that no case sees it lapse by accident. */
const LONG_TTL_MS = 60_000;
/**
 * Short enough to wait out; long enough for a few statements, a new pool's first connection
 * included, on a loaded machine (at 300 ms such a lease lapsed before the next statement).
 */
const SHORT_TTL_MS = 1_000;

/** Try `acquire` every 10 ms until it answers a lease or `withinMs` passed: the lease and how long it took. */
async function acquireWithin(store: Leases, name: string, holder: string, withinMs: number): Promise<{ lease: HeldLease | null; tookMs: number }> {
  const startMs = performance.now();
  for (;;) {
    const lease = await store.acquire(name, holder, LONG_TTL_MS);
    const tookMs = performance.now() - startMs;
    if (lease !== null || tookMs > withinMs) return { lease, tookMs };
    await sleep(10);
  }
}

export const leasesCases: Record<string, ContractCase<LeasesEnv>> = {
  'a free lease is taken at epoch 1 and renewed by its holder at the same epoch; another holder is refused while it stands': async ({ store, other }) => {
    const a = await store.acquire('sla-ticker', 'server-a', LONG_TTL_MS);
    expect(a).toMatchObject({ name: 'sla-ticker', holder: 'server-a', epoch: 1 });
    const b = other();
    expect(await b.acquire('sla-ticker', 'server-b', LONG_TTL_MS)).toBeNull();
    const renewed = await b.acquire('sla-ticker', 'server-a', LONG_TTL_MS);
    expect(renewed).toMatchObject({ holder: 'server-a', epoch: 1 });
    expect(renewed!.expiresMs).toBeGreaterThanOrEqual(a!.expiresMs);
    expect(await b.check('sla-ticker', 'server-a', 1)).toBe(true);
    expect(await store.check('sla-ticker', 'server-b', 1)).toBe(false);
    // Another name is another lease.
    expect(await b.acquire('pull-reconciler', 'server-b', LONG_TTL_MS)).toMatchObject({ holder: 'server-b', epoch: 1 });
  },

  'a lease given back is taken again at a higher epoch, even by its last holder; a stale or foreign release does nothing': async ({ store, other }) => {
    const b = other();
    const a1 = (await store.acquire('checkpoint-signing', 'server-a', LONG_TTL_MS))!;
    expect(await b.release('checkpoint-signing', 'server-b', a1.epoch)).toBe(false);
    expect(await b.release('checkpoint-signing', 'server-a', a1.epoch + 1)).toBe(false);
    expect(await store.check('checkpoint-signing', 'server-a', a1.epoch)).toBe(true);
    expect(await store.release('checkpoint-signing', 'server-a', a1.epoch)).toBe(true);
    expect(await store.check('checkpoint-signing', 'server-a', a1.epoch)).toBe(false);
    const b1 = (await b.acquire('checkpoint-signing', 'server-b', LONG_TTL_MS))!;
    expect(b1.epoch).toBe(a1.epoch + 1);
    expect(await b.release('checkpoint-signing', 'server-b', b1.epoch)).toBe(true);
    const a2 = (await store.acquire('checkpoint-signing', 'server-a', LONG_TTL_MS))!;
    expect(a2.epoch).toBe(b1.epoch + 1);
    expect(await b.release('checkpoint-signing', 'server-b', b1.epoch)).toBe(false);
    expect(await store.check('checkpoint-signing', 'server-a', a2.epoch)).toBe(true);
    expect(await store.check('checkpoint-signing', 'server-a', a1.epoch)).toBe(false);
  },

  'an expired lease moves to another holder within its TTL, at a higher epoch, and the old holder then fails its check': async ({ store, other }) => {
    const b = other();
    // Connected before the short lease is taken: its first connection is not timed against the lease.
    await b.check('demo-traffic', 'server-b', 1);
    const a = (await store.acquire('demo-traffic', 'server-a', SHORT_TTL_MS))!;
    expect(await b.acquire('demo-traffic', 'server-b', LONG_TTL_MS)).toBeNull();
    const { lease, tookMs } = await acquireWithin(b, 'demo-traffic', 'server-b', SHORT_TTL_MS + 500);
    expect(lease).toMatchObject({ holder: 'server-b', epoch: a.epoch + 1 });
    expect(tookMs).toBeLessThanOrEqual(SHORT_TTL_MS + 500);
    expect(await store.check('demo-traffic', 'server-a', a.epoch)).toBe(false);
    expect(await b.check('demo-traffic', 'server-b', lease!.epoch)).toBe(true);
    // The old holder cannot renew its way back while the new one holds it.
    expect(await store.acquire('demo-traffic', 'server-a', LONG_TTL_MS)).toBeNull();
    expect(await store.release('demo-traffic', 'server-a', a.epoch)).toBe(false);
  },

  'a lease that lapsed fails its check even when no one took it; its holder takes it back': async ({ store }) => {
    const a = (await store.acquire('reconciliation-runs', 'server-a', SHORT_TTL_MS))!;
    expect(await store.check('reconciliation-runs', 'server-a', a.epoch)).toBe(true);
    await sleep(SHORT_TTL_MS + 100);
    expect(await store.check('reconciliation-runs', 'server-a', a.epoch)).toBe(false);
    const again = await store.acquire('reconciliation-runs', 'server-a', LONG_TTL_MS);
    expect(again?.holder).toBe('server-a');
    expect(await store.check('reconciliation-runs', 'server-a', again!.epoch)).toBe(true);
  },

  'two holders racing to take, renew and give back a lease many times at once never hold the same epoch': async ({ store, other }) => {
    const b = other();
    const held: HeldLease[] = [];
    const race = async (leases: Leases, holder: string) => {
      for (let round = 0; round < 40; round++) {
        const calls = Array.from({ length: 4 }, () => leases.acquire('sla-ticker', holder, LONG_TTL_MS));
        const got = (await Promise.all(calls)).filter((lease): lease is HeldLease => lease !== null);
        held.push(...got);
        // Every call of one round holds it at one epoch: a renewal never moves it.
        expect(new Set(got.map((lease) => lease.epoch)).size).toBeLessThanOrEqual(1);
        if (got.length > 0 && round % 2 === 0) await leases.release('sla-ticker', holder, got[0]!.epoch);
      }
    };
    await Promise.all([race(store, 'server-a'), race(b, 'server-b')]);
    const holders = new Map<number, Set<string>>();
    for (const lease of held) holders.set(lease.epoch, (holders.get(lease.epoch) ?? new Set()).add(lease.holder));
    const shared = [...holders].filter(([, names]) => names.size > 1);
    expect(shared).toEqual([]);
    // The lease did move between them: the race was one.
    expect(new Set(held.map((lease) => lease.holder))).toEqual(new Set(['server-a', 'server-b']));
    expect(holders.size).toBeGreaterThan(2);
  },

  'the leases of a prefix held unexpired are counted, on every connection; one given back or lapsed is not': async ({ store, other }) => {
    const b = other();
    expect(await store.countHeld('server-alive-')).toBe(0);
    const one = (await store.acquire('server-alive-0', 'server-a', LONG_TTL_MS))!;
    await b.acquire('server-alive-1', 'server-b', SHORT_TTL_MS);
    await b.acquire('server-alive-2', 'server-c', LONG_TTL_MS);
    await store.acquire('sla-ticker', 'server-a', LONG_TTL_MS);
    expect([await store.countHeld('server-alive-'), await b.countHeld('server-alive-')]).toEqual([3, 3]);
    await store.release('server-alive-0', 'server-a', one.epoch);
    await sleep(SHORT_TTL_MS + 100);
    expect(await b.countHeld('server-alive-')).toBe(1);
    expect(await store.countHeld('sla-')).toBe(1);
  },

  'a lease is taken over only from the holder and epoch it is held at, at once and at the next epoch; the old holder then fails its check': async ({ store, other }) => {
    const b = other();
    expect(await store.heldNow('sla-ticker')).toBeNull();
    const a = (await store.acquire('sla-ticker', 'server-a', LONG_TTL_MS))!;
    const kept = (await store.acquire('checkpoint-signing', 'server-a', LONG_TTL_MS))!;
    expect(await b.heldNow('sla-ticker')).toMatchObject({ name: 'sla-ticker', holder: 'server-a', epoch: a.epoch });
    // A take-over that names another holder, or another epoch, leaves the live holder's lease alone.
    expect(await b.takeOver('sla-ticker', 'server-b', LONG_TTL_MS, { holder: 'server-gone', epoch: a.epoch })).toBeNull();
    expect(await b.takeOver('sla-ticker', 'server-b', LONG_TTL_MS, { holder: 'server-a', epoch: a.epoch + 1 })).toBeNull();
    expect(await store.check('sla-ticker', 'server-a', a.epoch)).toBe(true);
    const taken = await b.takeOver('sla-ticker', 'server-b', LONG_TTL_MS, { holder: 'server-a', epoch: a.epoch });
    expect(taken).toMatchObject({ name: 'sla-ticker', holder: 'server-b', epoch: a.epoch + 1 });
    expect(await store.check('sla-ticker', 'server-a', a.epoch)).toBe(false);
    expect(await store.acquire('sla-ticker', 'server-a', LONG_TTL_MS)).toBeNull();
    expect(await store.heldNow('sla-ticker')).toMatchObject({ holder: 'server-b', epoch: a.epoch + 1 });
    // It moved: a second take-over from the old holder takes nothing; the other lease was not touched.
    expect(await store.takeOver('sla-ticker', 'server-c', LONG_TTL_MS, { holder: 'server-a', epoch: a.epoch })).toBeNull();
    expect(await b.check('checkpoint-signing', 'server-a', kept.epoch)).toBe(true);
    // A lease given back is held by nobody, and taken over from nobody.
    expect(await b.release('sla-ticker', 'server-b', taken!.epoch)).toBe(true);
    expect(await store.heldNow('sla-ticker')).toBeNull();
    expect(await store.takeOver('sla-ticker', 'server-c', LONG_TTL_MS, { holder: 'server-b', epoch: taken!.epoch })).toBeNull();
    await expect(store.takeOver('sla-ticker', 'server-c', LONG_TTL_MS, { holder: 'server-c', epoch: 1 })).rejects.toThrow(RangeError);
  },

  'servers taking over one dead holder\'s lease at once: one of them takes it': async ({ store, other }) => {
    const servers = [store, other(), other()];
    for (let round = 0; round < 8; round++) {
      const name = `server-alive-${round}`;
      const dead = (await store.acquire(name, 'server-dead', LONG_TTL_MS))!;
      const taken = await Promise.all(servers.map((leases, i) => leases.takeOver(name, `server-${i}`, LONG_TTL_MS, dead)));
      const winners = taken.filter((lease): lease is HeldLease => lease !== null);
      expect(winners).toHaveLength(1);
      expect(winners[0]!.epoch).toBe(dead.epoch + 1);
      expect(await store.heldNow(name)).toMatchObject({ holder: winners[0]!.holder, epoch: dead.epoch + 1 });
    }
  },

  'a name, a holder and a positive whole TTL are required': async ({ store }) => {
    await expect(store.acquire('', 'server-a', LONG_TTL_MS)).rejects.toThrow(RangeError);
    await expect(store.acquire('sla-ticker', '', LONG_TTL_MS)).rejects.toThrow(RangeError);
    await expect(store.acquire('sla-ticker', 'server-a', 0)).rejects.toThrow(RangeError);
    await expect(store.acquire('sla-ticker', 'server-a', 1.5)).rejects.toThrow(RangeError);
    expect(await store.check('sla-ticker', 'server-a', 1)).toBe(false);
  },
};
