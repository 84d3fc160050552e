import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { SqliteJournal } from '../../db/journal-store.ts';
import { StoreBusyError } from '../../db/port/errors.ts';
import { rowOf } from '../../db/journal-rules.ts';
import type { Entry } from '../../shared/entries.ts';
import { sealEntry } from '../../server/journal/hash.ts';
import { JournalCorruptError, type JournalStore } from '../../server/journal/store.ts';
import type { LiveSocket } from '../../server/live/hub.ts';
import { BUSY_RETRY_DELAYS_MS, Views } from '../../server/views/views.ts';
import { JournalUnavailableError } from '../../server/views/failures.ts';
import { cleanUpDatabases, effectIdOf, fakeClock, fields, openTempDatabase } from '../support/db-journals.ts';

// server/views/views.ts owns the follower and the projections: every read awaits a catch-up, a busy
// database is retried three times with backoff before it counts, and a corrupt journal is never
// swallowed: logged once, then every read is refused until a restart.

afterEach(cleanUpDatabases);

const root = fileURLToPath(new URL('../../', import.meta.url));
const eid = effectIdOf(1);

/** What the store throws when another connection holds the lock past the busy timeout. */
const busy = () => new StoreBusyError('database is locked');

/** A SQLite journal of three entries (seq 1..3) whose append-only triggers are dropped, so a test can corrupt it. */
async function threeEntries() {
  const { db, sqlite } = openTempDatabase();
  const journal = new SqliteJournal({ db, ...fakeClock() });
  await journal.append('PROPOSED', eid, fields('PROPOSED', { effect: { amount: 5 } }));
  await journal.append('AUTHORIZED', eid, fields('AUTHORIZED', { lease: 'g1' }));
  await journal.append('DISPATCHED', eid, fields('DISPATCHED', { effect: { amount: 5 } }));
  sqlite.exec('DROP TRIGGER entries_no_update; DROP TRIGGER entries_no_delete;');
  const corrupt = (seq: number) => sqlite.exec(`UPDATE entries SET body = json_set(body, '$.effect.amount', 500) WHERE seq = ${seq}`);
  /** Store `entry` as row `seq` (a new row when there is none), its hash holding over its body: only its place in its chain can give it away. */
  const store = (seq: number, entry: Entry) => {
    const row = rowOf(entry);
    sqlite
      .prepare('INSERT OR REPLACE INTO entries (seq, effect_id, kind, prev, hash, closes, ts_ms, body, reserves) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)')
      .run(seq, row.effectId, row.kind, row.prev, row.hash, row.closes, row.tsMs, row.body, row.reserves);
  };
  return { journal, corrupt, store };
}

/** An entry of `eid` sealed after `prev`, as a forger with the journal file would seal it. */
function sealedAfter(prev: string | null, overrides: Record<string, unknown> = {}): Entry {
  return sealEntry({ ...fields('AUTHORIZED', { lease: 'forged' }), ...overrides, effect_id: eid, kind: 'AUTHORIZED', ts_ms: 1, prev }) as unknown as Entry;
}

/** The journal, with its scans failing with `errors` (one per scan, in order) before they answer; `scans` counts them. */
function failingScans(journal: JournalStore, errors: unknown[]) {
  const counter = { scans: 0 };
  const wrapped = new Proxy(journal, {
    get(target, property) {
      if (property === 'scan') {
        return async (afterSeq: number, limit: number) => {
          counter.scans += 1;
          const error = errors.shift();
          if (error !== undefined) throw error;
          return target.scan(afterSeq, limit);
        };
      }
      const value = Reflect.get(target, property) as unknown;
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return { journal: wrapped, counter };
}

function buildViews(journal: JournalStore, options: { sleep?: (ms: number) => Promise<void> } = {}) {
  const log = { fatal: vi.fn(), error: vi.fn() };
  const slept: number[] = [];
  const sleep =
    options.sleep ??
    (async (ms: number) => {
      slept.push(ms);
    });
  const views = new Views({ journal, inboxName: 'inbox', nowMs: () => 0, log, sleep });
  return { views, log, slept };
}

describe('views.current()', () => {
  it('catches up with every entry durable before the call, however it was written', async () => {
    const { journal } = await threeEntries();
    const { views } = buildViews(journal);
    expect((await views.current()).seq).toBe(3);
    await journal.append('COMMITTED', eid, fields('COMMITTED'));
    const { seq, inbox } = await views.current();
    expect(seq).toBe(4);
    expect(inbox.chains.get(eid)?.committed).toMatchObject({ kind: 'COMMITTED' });
  });
});

describe('a busy database', () => {
  it('is retried after 50, 100 and 200 ms; a read that then succeeds is whole', async () => {
    const { journal: base } = await threeEntries();
    const { journal, counter } = failingScans(base, [busy(), busy(), busy()]);
    const { views, log, slept } = buildViews(journal);
    expect((await views.current()).seq).toBe(3);
    expect(slept).toEqual([50, 100, 200]);
    expect(counter.scans).toBe(5);
    expect(log.error).not.toHaveBeenCalled();
  });

  it('a fourth busy answer counts as an error: the read fails with it, and the views stay available', async () => {
    const { journal: base } = await threeEntries();
    const { journal } = failingScans(base, [busy(), busy(), busy(), busy()]);
    const { views, slept } = buildViews(journal);
    await expect(views.current()).rejects.toThrow('database is locked');
    expect(slept).toEqual([50, 100, 200]);
    expect(views.unavailable).toBeNull();
    expect((await views.current()).seq).toBe(3);
  });

  it('waits for real: 50 + 100 + 200 ms by default', async () => {
    expect(BUSY_RETRY_DELAYS_MS).toEqual([50, 100, 200]);
    const { journal: base } = await threeEntries();
    const { journal } = failingScans(base, [busy(), busy(), busy()]);
    const views = new Views({ journal, inboxName: 'inbox', nowMs: () => 0, log: { fatal: vi.fn(), error: vi.fn() } });
    const startMs = performance.now();
    expect((await views.current()).seq).toBe(3);
    expect(performance.now() - startMs).toBeGreaterThanOrEqual(340);
  });

  it('only the store\'s busy error is retried: any other error fails the read at once', async () => {
    const { journal: base } = await threeEntries();
    const { journal, counter } = failingScans(base, [Object.assign(new Error('disk I/O error'), { code: 'SQLITE_IOERR' })]);
    const { views, slept } = buildViews(journal);
    await expect(views.current()).rejects.toThrow('disk I/O error');
    expect([slept, counter.scans]).toEqual([[], 1]);
  });
});

describe('a corrupt journal', () => {
  it('makes the views unavailable, logged once naming the seq and the effect id, and every later read is refused without reading', async () => {
    const { journal: base, corrupt } = await threeEntries();
    corrupt(2);
    const { journal, counter } = failingScans(base, []);
    const { views, log } = buildViews(journal);
    const failure = await views.current().catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(JournalUnavailableError);
    expect((failure as JournalUnavailableError).corrupt).toMatchObject({ seq: 2, effectId: eid });
    expect(log.fatal).toHaveBeenCalledTimes(1);
    const [logged, line] = log.fatal.mock.calls[0]!;
    expect(logged).toMatchObject({ code: 'journal_corrupt', seq: 2, effectId: eid });
    expect(line).toMatch(new RegExp(`seq 2, effect ${eid}`));
    expect(line).not.toMatch(/\n/);
    const scans = counter.scans;
    await expect(views.current()).rejects.toBe(failure);
    views.refresh();
    expect(views.report(new JournalCorruptError('journal entry seq 3 does not match its hash', { seq: 3, effectId: eid }))).toBe(true);
    expect(counter.scans).toBe(scans);
    expect(log.fatal).toHaveBeenCalledTimes(1);
    expect(() => views.assertAvailable()).toThrow(JournalUnavailableError);
  });

  it('is not retried like a busy database', async () => {
    const { journal: base, corrupt } = await threeEntries();
    corrupt(3);
    const { journal, counter } = failingScans(base, []);
    const { views, slept } = buildViews(journal);
    await expect(views.current()).rejects.toThrow(JournalUnavailableError);
    expect([slept, counter.scans]).toEqual([[], 1]);
  });

  it('found by the poll is logged once however often it polls, and the poll stops', async () => {
    const { journal, corrupt } = await threeEntries();
    corrupt(1);
    const { views, log } = buildViews(journal);
    views.startPolling(5);
    await new Promise((resolve) => setTimeout(resolve, 100));
    views.stopPolling();
    expect(log.fatal).toHaveBeenCalledTimes(1);
    expect(log.error).not.toHaveBeenCalled();
    expect(views.unavailable?.corrupt.seq).toBe(1);
  });

  it('a row whose hash holds but that does not link to the entry before it in its chain: the catch-up refuses it', async () => {
    const { journal, store } = await threeEntries();
    store(4, sealedAfter('a'.repeat(64)));
    const { views, log } = buildViews(journal);
    await expect(views.current()).rejects.toThrow(JournalUnavailableError);
    expect(views.unavailable?.corrupt).toMatchObject({ seq: 4, effectId: eid });
    expect(log.fatal).toHaveBeenCalledTimes(1);
  });

  it("a chain's last row replaced after the views verified it, its hash holding: the chain is never read out, and the views stand failed", async () => {
    const { journal, store } = await threeEntries();
    const { views, log } = buildViews(journal);
    const verified = await views.current();
    const [proposed, authorized, dispatched] = await verified.chain(eid);
    expect([proposed?.kind, authorized?.kind, dispatched?.kind]).toEqual(['PROPOSED', 'AUTHORIZED', 'DISPATCHED']);
    store(3, sealedAfter(authorized!.hash, { lease: 'rewritten' }));
    expect((await journal.entries(eid)).at(-1)).toMatchObject({ lease: 'rewritten' });
    await expect((await views.current()).chain(eid)).rejects.toThrow(JournalUnavailableError);
    expect(views.unavailable?.corrupt).toMatchObject({ seq: 3, effectId: eid });
    expect(log.fatal).toHaveBeenCalledTimes(1);
  });

  it('the journal the views give the services refuses every call once they stand failed, and a corrupt row it meets makes them so', async () => {
    const { journal: base, corrupt } = await threeEntries();
    const { views, log } = buildViews(base);
    await views.current();
    corrupt(2);
    // The views have applied the row already: only a read of the chain meets the edit.
    await expect(views.journal.entries(eid)).rejects.toThrow(JournalCorruptError);
    expect(views.unavailable?.corrupt).toMatchObject({ seq: 2, effectId: eid });
    const calls = [
      views.journal.entries(effectIdOf(2)),
      views.journal.append('PROPOSED', effectIdOf(2), fields('PROPOSED')),
      views.journal.appendIf('PROPOSED', effectIdOf(2), () => null, fields('PROPOSED')),
      views.journal.claim(effectIdOf(2), 'me', 1_000),
      views.journal.release(effectIdOf(2), 'me'),
      views.journal.reservations('pi_1'),
      views.journal.inFlight(),
      views.journal.scan(0, 10),
    ];
    for (const call of calls) await expect(call).rejects.toThrow(JournalUnavailableError);
    expect(await base.entries(effectIdOf(2))).toEqual([]);
    expect(log.fatal).toHaveBeenCalledTimes(1);
  });

  it('closes the live sockets, so the pages reconnect and are told why', async () => {
    const { journal, corrupt } = await threeEntries();
    const { views } = buildViews(journal);
    const socket: LiveSocket & { closed: unknown[] } = {
      closed: [],
      readyState: 1,
      send: () => undefined,
      close(code, reason) {
        this.closed.push([code, reason]);
      },
    };
    await views.join(socket, new Set(['ap-leads']));
    await journal.append('COMMITTED', eid, fields('COMMITTED'));
    corrupt(4);
    await expect(views.current()).rejects.toThrow(JournalUnavailableError);
    expect(socket.closed).toEqual([[1011, 'journal_unavailable']]);
  });
});

describe('a catch-up nobody waits for', () => {
  it('is handled: a failure is logged, never an unhandled rejection, and the next read tries again', async () => {
    const { journal: base } = await threeEntries();
    const { journal } = failingScans(base, [new Error('disk I/O error')]);
    const { views, log } = buildViews(journal);
    views.refresh();
    await vi.waitFor(() => expect(log.error).toHaveBeenCalledTimes(1));
    expect((await views.current()).seq).toBe(3);
  });
});

describe('who catches up', () => {
  const sources = (dir: string): string[] =>
    readdirSync(join(root, dir)).flatMap((name) => {
      const path = join(dir, name);
      return statSync(join(root, path)).isDirectory() ? sources(path) : path.endsWith('.ts') ? [path] : [];
    });

  const text = (file: string) => readFileSync(join(root, file), 'utf8');

  it('only the views call the follower: no route or service catches up by itself, and none fires a catch-up and forgets it', () => {
    expect(sources('server').filter((file) => /\.catchUp\(/.test(text(file)))).toEqual(['server/views/views.ts']);
    expect(sources('server').filter((file) => /void [^;\n]*catchUp/.test(text(file)))).toEqual([]);
    expect(sources('server').filter((file) => /new JournalFollower\(/.test(text(file)))).toEqual(['server/views/views.ts']);
  });

  it('no route reads a chain or the journal past the views: what a route shows or signs is what the views verified', () => {
    expect(sources('server/http').filter((file) => /journal\.(entries|scan|inFlight|reservations)\(/.test(text(file)))).toEqual([]);
  });
});
