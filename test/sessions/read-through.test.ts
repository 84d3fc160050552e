import { createHash } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { MemorySessions } from '../../db/memory/sessions.ts';
import { SqliteSessions } from '../../db/session-store.ts';
import { cleanUpDatabases, openTempDatabase } from '../support/db-journals.ts';
import { seenGraceMs, SessionStore } from '../../server/sessions/sessions.ts';

// Two servers on one store, each with its own cache, on one fake wall clock.
function twoServers(idleMs: number, absoluteMs = 8 * 3_600_000) {
  const store = new MemorySessions();
  let now = 1_000_000;
  const wallMs = () => now;
  const make = () => new SessionStore({ idleMs, absoluteMs, wallMs, store });
  return { a: make(), b: make(), make, advance: (ms: number) => (now += ms) };
}

describe('sessions read through: an end made here is never undone by a read under way', () => {
  it('a logout is not undone by a read of the same session in flight on the same server', async () => {
    const { a, advance } = twoServers(15 * 60_000);
    const { id } = await a.create('ana');
    // The cached copy is older than a second: the next call reads the store.
    advance(2_000);
    const inFlight = a.touch(id);
    await a.end(id);
    await inFlight;
    // Logged out on this very server: the cookie must be refused at once.
    expect(await a.touch(id)).toBeNull();
  });

  it('a reload ending a person is not undone by a read in flight on the same server', async () => {
    const { a, advance } = twoServers(15 * 60_000);
    const { id } = await a.create('ana');
    advance(2_000);
    const inFlight = a.check(id);
    await a.endFor(new Set(['ana']));
    await inFlight;
    expect(await a.check(id)).toBeNull();
  });

  it('on SQLite too: a logout is not undone by a read of the same session in flight on the same server', async () => {
    let now = 1_000_000;
    const a = new SessionStore({ idleMs: 15 * 60_000, absoluteMs: 8 * 3_600_000, wallMs: () => now, store: new SqliteSessions(openTempDatabase().db) });
    const { id } = await a.create('ana');
    now += 2_000;
    const inFlight = a.touch(id);
    await a.end(id);
    await inFlight;
    expect(await a.touch(id)).toBeNull();
  });
});

afterAll(cleanUpDatabases);

describe('the cache limit', () => {
  it('a session pushed out of one server\'s cache is not announced as ended while it stands', async () => {
    const { a, b, make } = twoServers(15 * 60_000);
    const ana = await b.create('ana');
    const onA = await a.check(ana.id);
    expect(onA).toMatchObject({ name: 'ana' });
    // Ana's live page on A closes when A announces her session ended.
    const ended: string[] = [];
    a.onEnded((session, why) => {
      if (session === onA) ended.push(why);
    });
    // Ten thousand other people log in on other servers and call A once each: A's cache fills past its limit.
    let logins = make();
    for (let i = 0; i < 10_000; i += 1) {
      if (i % 1_000 === 0) logins = make();
      const other = await logins.create(`p${i}`);
      await a.check(other.id);
    }
    // Ana's session stands in the store (B honours it), so her page on A must not have been closed.
    expect(await b.check(ana.id)).toMatchObject({ name: 'ana' });
    expect(ended).toEqual([]);
  });

  it('a login on a server whose cache is full pushes out its oldest session without ending it for the others', async () => {
    const { a, b } = twoServers(15 * 60_000);
    const ana = await a.create('ana');
    for (let i = 0; i < 10_000; i += 1) await a.create(`p${i}`);
    expect(await b.check(ana.id)).toMatchObject({ name: 'ana' });
    expect(await a.check(ana.id)).toMatchObject({ name: 'ana' });
  });
});

describe('the idle limit across servers', () => {
  it('a session kept alive by calls on A is not ended as idle by B within its idle limit', async () => {
    // The shortest idle limit the config accepts: one minute.
    const { a, b, advance } = twoServers(60_000);
    const { id } = await a.create('ana');
    // Ana works on A every 25 s: never idle for more than 25 s.
    for (let i = 0; i < 5; i += 1) {
      advance(25_000);
      expect(await a.touch(id)).toMatchObject({ name: 'ana' });
    }
    // B read her session long ago; her next call lands on B 59 s after her last one on A.
    expect(await b.check(id)).toMatchObject({ name: 'ana' });
    advance(59_000);
    expect(await b.touch(id)).toMatchObject({ name: 'ana' });
  });

  it('a session idle on every server is ended by any of them once past its limit and grace', async () => {
    const idleMs = 60_000;
    const { a, b, advance } = twoServers(idleMs);
    const { id } = await a.create('ana');
    advance(10_000);
    expect(await a.touch(id)).toMatchObject({ name: 'ana' });
    advance(idleMs + seenGraceMs(idleMs) + 1);
    expect(await b.touch(id)).toBe('expired');
    expect(await a.touch(id)).toBeNull();
  });

  it('a last-seen time the store failed to keep is written again at the next call, not a grace later', async () => {
    const store = new MemorySessions();
    let failing = false;
    const seen = store.seen.bind(store);
    store.seen = async (hash, atMs) => {
      if (failing) throw new Error('the store is away');
      return seen(hash, atMs);
    };
    let now = 1_000_000;
    const a = new SessionStore({ idleMs: 60_000, absoluteMs: 8 * 3_600_000, wallMs: () => now, store });
    const { id } = await a.create('ana');
    now += 5_000;
    failing = true;
    await expect(a.touch(id)).rejects.toThrow('the store is away');
    failing = false;
    now += 10;
    expect(await a.touch(id)).toMatchObject({ name: 'ana' });
    expect((await store.get(createHash('sha256').update(id).digest('hex')))?.lastSeenAtMs).toBe(now);
  });
});
