import { afterAll, describe, expect, it } from 'vitest';
import { MemorySessions } from '../../db/memory/sessions.ts';
import { SqliteSessions } from '../../db/session-store.ts';
import { cleanUpDatabases, openTempDatabase } from '../support/db-journals.ts';
import { SessionStore } from '../../server/sessions/sessions.ts';

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
});
