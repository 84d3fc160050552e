import { afterEach, describe, expect, it } from 'vitest';
import { rowOf, sealNext } from '../../db/journal-rules.ts';
import { SqliteJournal } from '../../db/journal-store.ts';
import { openDatabase } from '../../db/open.ts';
import { StoreBusyError, StoreClosedError } from '../../db/port/errors.ts';
import { storageOver } from '../../db/sqlite-storage.ts';
import { globalHashOf } from '../../server/journal/hash.ts';
import type { JsonObject } from '../../shared/json.ts';
import { cleanUpDatabases, effectIdOf, fakeClock, fields, openTempDatabase, tempDbFile } from '../support/db-journals.ts';

afterEach(cleanUpDatabases);

// The stores over one SQLite connection: its lock, its snapshots, and the port's errors for a
// connection that is closed or whose file another process holds locked.

const rejection = (r: PromiseSettledResult<unknown>) => (r.status === 'rejected' ? `${(r.reason as Error).name}: ${(r.reason as Error).message}` : null);

describe('Storage.close() while work on the connection is under way', () => {
  it('a read of the journal started before close() is answered, not cut off between its statements', async () => {
    const storage = storageOver(openDatabase(tempDbFile()));
    const journal = storage.journal({ ...fakeClock() });
    await journal.append('PROPOSED', effectIdOf(1), fields('PROPOSED'));
    // head() holds the connection's lock: it reads the newest seal, then (after an await) the count.
    const head = journal.head();
    await storage.close();
    const [settled] = await Promise.allSettled([head]);
    expect(rejection(settled!)).toBeNull();
  });

  it("work queued behind close() is refused with the port's StoreClosedError, never the driver's", async () => {
    const storage = storageOver(openDatabase(tempDbFile()));
    const journal = storage.journal({ ...fakeClock() });
    const write = journal.append('PROPOSED', effectIdOf(1), fields('PROPOSED'));
    const closing = storage.close();
    const afterwards = [journal.scan(0, 10), storage.sessions.get('x'), storage.checkpoints.latest(), storage.integrity.guardProblems()];
    await closing;
    const settled = await Promise.allSettled([write, ...afterwards]);
    for (const result of settled) {
      expect(result.status).toBe('rejected');
      expect((result as PromiseRejectedResult).reason).toBeInstanceOf(StoreClosedError);
    }
    await storage.close();
  });
});

describe('the SQLite journal when another process holds the write lock', () => {
  it('a batch whose BEGIN cannot take the lock is refused whole, the loop held about one busy_timeout, not one per write', async () => {
    const busyMs = 100;
    const { db, sqlite, file } = openTempDatabase();
    sqlite.pragma(`busy_timeout = ${busyMs}`);
    const journal = new SqliteJournal({ db, ...fakeClock() });
    const holder = openTempDatabase(file).sqlite;
    holder.exec('BEGIN IMMEDIATE');
    let longestTurnMs = 0;
    let last = performance.now();
    const ticker = setInterval(() => {
      const now = performance.now();
      longestTurnMs = Math.max(longestTurnMs, now - last);
      last = now;
    }, 1);
    const startedMs = performance.now();
    const results = await Promise.allSettled(Array.from({ length: 20 }, (_, i) => journal.append('PROPOSED', effectIdOf(i + 1), fields('PROPOSED'))));
    const tookMs = performance.now() - startedMs;
    longestTurnMs = Math.max(longestTurnMs, performance.now() - last);
    clearInterval(ticker);
    holder.exec('ROLLBACK');
    // Each write is refused with the port's error, which callers retry, not SQLite's own.
    expect(results.map((r) => (r.status === 'rejected' && r.reason instanceof StoreBusyError ? 'busy' : r.status))).toEqual(Array(20).fill('busy'));
    // Retried one by one, each of the 20 writes would wait out its own BEGIN: about 2.1 s, in one turn.
    expect({ tookMs: tookMs < 4 * busyMs, loopHeldMs: longestTurnMs < 4 * busyMs }).toEqual({ tookMs: true, loopHeldMs: true });
    expect(journal.commitStats).toMatchObject({ refusedBatches: 1, retriedBatches: 0 });
  }, 20_000);

  it("the stores beside the journal answer a held lock with the port's StoreBusyError too", async () => {
    const database = openDatabase(tempDbFile());
    database.sqlite.pragma('busy_timeout = 0');
    const storage = storageOver(database);
    const holder = openTempDatabase(database.file).sqlite;
    holder.exec('BEGIN IMMEDIATE');
    const session = { name: 'ana', csrfToken: 'c', createdAtMs: 1, lastSeenAtMs: 1 };
    await expect(storage.sessions.create('h', session)).rejects.toBeInstanceOf(StoreBusyError);
    holder.exec('ROLLBACK');
    await storage.sessions.create('h', session);
    expect(await storage.sessions.get('h')).toEqual(session);
    await storage.close();
  });
});

describe('SqliteJournal.head() while another connection commits', () => {
  it('its size is the number of entries through its seq: the seal and the count come from one snapshot', async () => {
    const { db, file } = openTempDatabase();
    const journal = new SqliteJournal({ db, ...fakeClock() });
    const first = await journal.append('PROPOSED', effectIdOf(1), fields('PROPOSED'));
    const firstHead = await journal.head();
    // Another process's append, as it would commit: an entry sealed by the journal's rules, and its seal.
    const other = openTempDatabase(file).sqlite;
    const entry = sealNext('PROPOSED', effectIdOf(2), fields('PROPOSED') as unknown as JsonObject, undefined, first.ts_ms + 1);
    const row = rowOf(entry);
    const head = journal.head(); // reads the newest seal now, the count after its first await
    const { lastInsertRowid } = other
      .prepare('INSERT INTO entries (effect_id, kind, prev, hash, closes, ts_ms, body, reserves) VALUES (?, ?, ?, ?, ?, ?, ?, ?)')
      .run(row.effectId, row.kind, row.prev, row.hash, row.closes, row.tsMs, row.body, row.reserves);
    const seq = Number(lastInsertRowid);
    other.prepare('INSERT INTO journal_seals (seq, global_hash) VALUES (?, ?)').run(seq, globalHashOf(firstHead!.globalHash, seq, row.hash));
    const read = (await head)!;
    const through = (await journal.scan(0, 100)).filter((s) => s.seq <= read.seq).length;
    expect(read).toEqual({ seq: read.seq, globalHash: read.globalHash, size: through });
  });
});
