import { expect } from 'vitest';
import type { Sessions, StoredSession } from '../../db/port/sessions.ts';
import { SESSION_CONFIRM_MS, SessionStore } from '../../server/sessions/sessions.ts';
import type { ContractCase } from './contract.ts';

// What every session store does (db/port/sessions.ts): a session kept is found by every
// connection at once, one ended is gone for all of them at once, being seen moves a session
// forward and never brings an ended one back; and the server's read-through cache over it refuses
// a session another process ended within a second.

export interface SessionsEnv {
  store: Sessions;
  /** Another connection onto the same store (another process's view of it). */
  other(): Sessions;
}

const T0 = 1_700_000_000_000;
const session = (name: string, atMs = T0): StoredSession => ({ name, csrfToken: `csrf-${name}`, createdAtMs: atMs, lastSeenAtMs: atMs });
const hashOf = (n: number) => n.toString(16).padStart(64, '0');

/** Two servers' session caches over two connections, on one wall clock the test moves. */
function twoServers(env: SessionsEnv) {
  let nowMs = T0;
  const options = { idleMs: 3_600_000, absoluteMs: 86_400_000, wallMs: () => nowMs };
  return {
    a: new SessionStore({ ...options, store: env.store }),
    b: new SessionStore({ ...options, store: env.other() }),
    advance: (ms: number) => {
      nowMs += ms;
    },
  };
}

export const sessionsCases: Record<string, ContractCase<SessionsEnv>> = {
  'a session kept is found by its hash; an unknown hash finds none': async ({ store }) => {
    await store.create(hashOf(1), session('ana'));
    expect(await store.get(hashOf(1))).toEqual(session('ana'));
    expect(await store.get(hashOf(2))).toBeNull();
  },

  'being seen moves the last-seen time forward, never back': async ({ store }) => {
    await store.create(hashOf(1), session('ana'));
    expect(await store.seen(hashOf(1), T0 + 5_000)).toBe(true);
    expect(await store.seen(hashOf(1), T0 + 1_000)).toBe(true);
    expect((await store.get(hashOf(1)))?.lastSeenAtMs).toBe(T0 + 5_000);
  },

  'a session ended is gone; ending it again, or seeing it, changes nothing and never brings it back': async ({ store }) => {
    await store.create(hashOf(1), session('ana'));
    expect(await store.end(hashOf(1))).toBe(true);
    expect(await store.end(hashOf(1))).toBe(false);
    expect(await store.seen(hashOf(1), T0 + 60_000)).toBe(false);
    expect(await store.get(hashOf(1))).toBeNull();
  },

  "ending a person's sessions ends theirs only, and names them": async ({ store }) => {
    await store.create(hashOf(1), session('ana'));
    await store.create(hashOf(2), session('bea'));
    await store.create(hashOf(3), session('ana'));
    await store.create(hashOf(4), session('cy'));
    expect((await store.endFor(new Set(['ana', 'cy']))).sort()).toEqual([hashOf(1), hashOf(3), hashOf(4)]);
    expect(await store.get(hashOf(2))).toEqual(session('bea'));
    expect(await store.get(hashOf(1))).toBeNull();
    expect(await store.endFor(new Set(['ana']))).toEqual([]);
  },

  'a session kept or ended on another connection is seen so by the next read': async ({ store, other }) => {
    const elsewhere = other();
    expect(await store.get(hashOf(1))).toBeNull();
    await elsewhere.create(hashOf(1), session('ana'));
    expect(await store.get(hashOf(1))).toEqual(session('ana'));
    await elsewhere.end(hashOf(1));
    expect(await store.get(hashOf(1))).toBeNull();
  },

  'session ends racing reads and sightings on two connections: once ended, ended for both': async ({ store, other }) => {
    const elsewhere = other();
    for (let n = 1; n <= 20; n++) {
      await store.create(hashOf(n), session('ana'));
      const reads = Array.from({ length: 3 }, () => store.get(hashOf(n)));
      const ended = elsewhere.end(hashOf(n));
      const seen = store.seen(hashOf(n), T0 + n);
      await Promise.all([...reads, seen]);
      expect(await ended).toBe(true);
      expect(await store.get(hashOf(n))).toBeNull();
      expect(await elsewhere.get(hashOf(n))).toBeNull();
    }
  },

  'through the servers’ caches: a login on A works on B, a logout on B is refused by A within a second': async (env) => {
    const { a, b, advance } = twoServers(env);
    const { id, session: onA } = await a.create('ana');
    expect(await b.touch(id)).toMatchObject({ name: 'ana', csrfToken: onA.csrfToken });
    await b.end(id);
    expect(await b.check(id)).toBeNull();
    advance(SESSION_CONFIRM_MS);
    expect(await a.touch(id)).toBeNull();
  },

  'through the servers’ caches: a reload on B ending a person’s sessions is refused by A within a second, and a feed on A is told': async (env) => {
    const { a, b, advance } = twoServers(env);
    const { id, session: onA } = await a.create('ana');
    const ended: string[] = [];
    a.onEnded((s, why) => ended.push(`${s.name}:${why}`));
    // A read it again from the store a second on, as a feed's watch does.
    advance(SESSION_CONFIRM_MS);
    expect(await a.expireIfDue(onA)).toBe(false);
    expect(await b.endFor(new Set(['ana']))).toBe(1);
    advance(SESSION_CONFIRM_MS);
    expect(await a.expireIfDue(onA)).toBe(true);
    expect(ended).toEqual(['ana:ended']);
    expect(await a.check(id)).toBeNull();
  },
};
