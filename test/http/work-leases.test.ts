import { describe, expect, it } from 'vitest';
import { MemoryLeases } from '../../db/memory/leases.ts';
import type { Leases } from '../../db/port/leases.ts';
import { WorkLeases } from '../../server/app/work-leases.ts';

// One server's hold on its background work's leases (server/app/work-leases.ts), over leases in
// memory on a clock the test moves: who holds what, what a store that cannot be asked leaves, and
// what a stop gives back.

/** A clock the test moves, shared by the store and both servers. */
function testClock() {
  let nowMs = 1_000_000;
  return {
    nowMs: () => nowMs,
    advance: (ms: number) => {
      nowMs += ms;
    },
  };
}

/** A store whose calls fail while `down` is set, as a database that cannot be reached. */
function failing(inner: Leases): Leases & { down: boolean } {
  const store = {
    down: false,
    acquire: (name: string, holder: string, ttlMs: number) => (store.down ? Promise.reject(new Error('down')) : inner.acquire(name, holder, ttlMs)),
    release: (name: string, holder: string, epoch: number) => (store.down ? Promise.reject(new Error('down')) : inner.release(name, holder, epoch)),
    check: (name: string, holder: string, epoch: number) => (store.down ? Promise.reject(new Error('down')) : inner.check(name, holder, epoch)),
    countHeld: (prefix: string) => (store.down ? Promise.reject(new Error('down')) : inner.countHeld(prefix)),
    takeOver: (...args: Parameters<Leases['takeOver']>) => (store.down ? Promise.reject(new Error('down')) : inner.takeOver(...args)),
    heldNow: (name: string) => (store.down ? Promise.reject(new Error('down')) : inner.heldNow(name)),
    close: () => inner.close(),
  };
  return store;
}

describe('a server’s work leases', () => {
  it('one of two servers holds the work; the other takes it once it lapses, at the next epoch, and the first is told', async () => {
    const clock = testClock();
    const store = new MemoryLeases({ nowMs: clock.nowMs });
    const changes: string[] = [];
    const a = new WorkLeases({ store, holder: 'a', monoMs: clock.nowMs, onChange: (name, lease) => changes.push(`a ${name} ${lease?.epoch ?? 'lost'}`) });
    const b = new WorkLeases({ store, holder: 'b', monoMs: clock.nowMs });
    expect(await a.hold('sla-ticker')).toBe(true);
    expect(await b.hold('sla-ticker')).toBe(false);
    expect([a.holds('sla-ticker'), b.holds('sla-ticker')]).toEqual([true, false]);
    expect(await a.confirm('sla-ticker')).toBe(true);
    clock.advance(9_999);
    expect(await b.hold('sla-ticker')).toBe(false);
    clock.advance(1);
    expect(a.holds('sla-ticker')).toBe(false);
    expect(await b.hold('sla-ticker')).toBe(true);
    expect(b.held('sla-ticker')?.epoch).toBe(2);
    expect(await a.hold('sla-ticker')).toBe(false);
    expect(changes).toEqual(['a sla-ticker 1']);
  });

  it('while the store cannot be asked, a lease held counts until its TTL runs out here, then the work stops', async () => {
    const clock = testClock();
    const store = failing(new MemoryLeases({ nowMs: clock.nowMs }));
    const errors: string[] = [];
    const a = new WorkLeases({ store, holder: 'a', monoMs: clock.nowMs, onError: (name) => errors.push(name) });
    expect(await a.hold('checkpoint-signing')).toBe(true);
    store.down = true;
    clock.advance(5_000);
    expect(await a.hold('checkpoint-signing')).toBe(true);
    expect(await a.confirm('checkpoint-signing')).toBe(true);
    clock.advance(5_000);
    expect(await a.hold('checkpoint-signing')).toBe(false);
    expect(await a.hold('pull-reconciler')).toBe(false);
    expect(errors).toEqual(['checkpoint-signing', 'checkpoint-signing', 'checkpoint-signing', 'pull-reconciler']);
  });

  it('a stop gives every lease back: another server takes the work at once; the stopped one asks for nothing more', async () => {
    const clock = testClock();
    const store = new MemoryLeases({ nowMs: clock.nowMs });
    const a = new WorkLeases({ store, holder: 'a', monoMs: clock.nowMs });
    const b = new WorkLeases({ store, holder: 'b', monoMs: clock.nowMs });
    expect(await a.hold('pull-reconciler')).toBe(true);
    expect(await a.hold('demo-traffic')).toBe(true);
    await a.stop();
    expect(await b.hold('pull-reconciler')).toBe(true);
    expect(await b.hold('demo-traffic')).toBe(true);
    expect(await a.hold('pull-reconciler')).toBe(false);
    expect(a.holds('demo-traffic')).toBe(false);
  });

  it('started, it keeps the leases of the work named: renewed within the TTL however long between rounds', async () => {
    const store = new MemoryLeases();
    // A TTL of a second: at 300 ms, a loaded machine's event loop once stalled past it, and the
    // lease lapsed to b. Held through 2.5 s, it was renewed across more than two TTLs.
    const a = new WorkLeases({ store, holder: 'a', ttlMs: 1_000, renewMs: 250, retryMs: 20 });
    const b = new WorkLeases({ store, holder: 'b', ttlMs: 1_000, renewMs: 250, retryMs: 20 });
    a.start(['pull-reconciler']);
    await new Promise((resolve) => setTimeout(resolve, 50));
    b.start(['pull-reconciler']);
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    expect([a.holds('pull-reconciler'), b.holds('pull-reconciler')]).toEqual([true, false]);
    expect(a.held('pull-reconciler')?.epoch).toBe(1);
    await a.stop();
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(b.held('pull-reconciler')?.epoch).toBe(2);
    await b.stop();
  });

  it('each server holds a alive lease and counts the servers alive: a new one is counted, a stopped one at once, a dead one once its lease lapses', async () => {
    const clock = testClock();
    const store = failing(new MemoryLeases({ nowMs: clock.nowMs }));
    const [a, b, c] = ['a', 'b', 'c'].map((holder) => new WorkLeases({ store, holder, monoMs: clock.nowMs })) as [WorkLeases, WorkLeases, WorkLeases];
    expect(a.liveServers()).toBe(1);
    expect(await a.keepAliveLease()).toBe(1);
    expect(await b.keepAliveLease()).toBe(2);
    expect(await c.keepAliveLease()).toBe(3);
    expect(await a.keepAliveLease()).toBe(3);
    // b stops: it gives its alive lease back.
    await b.stop();
    expect(await a.keepAliveLease()).toBe(2);
    // c dies: a keeps renewing and counts it until its lease lapses.
    for (let i = 0; i < 3; i++) {
      clock.advance(3_000);
      expect(await a.keepAliveLease()).toBe(2);
    }
    clock.advance(1_000);
    expect(await a.keepAliveLease()).toBe(1);
    // A store that cannot be asked leaves the last count.
    expect(await c.keepAliveLease()).toBe(2);
    store.down = true;
    expect(await a.keepAliveLease()).toBe(1);
    store.down = false;
    expect(await a.keepAliveLease()).toBe(2);
  });
});
