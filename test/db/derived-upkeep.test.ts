import fs from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { SqliteBudgetSlots } from '../../db/budget-slot-store.ts';
import { SqliteDerivedTables } from '../../db/derived-store.ts';
import { DEFERRED_CHECKPOINT_PAGES, WAL_AUTOCHECKPOINT_PAGES } from '../../db/derived-upkeep.ts';
import { SqliteLeases } from '../../db/leases.ts';
import type { DerivedBatch } from '../../db/port/derived.ts';
import { cleanUpDatabases, openTempDatabase } from '../support/db-journals.ts';

afterEach(cleanUpDatabases);

// A catch-up's batches with the write-ahead log's checkpoints put off (db/derived-upkeep.ts): no
// checkpoint between them, the same rows and digests as batches written one checkpoint at a time,
// and one checkpoint after, off the connection, which then checkpoints on its own again.

const ROWS_A_BATCH = 400;
const BATCHES = 4;
/** A body of about 3 KB: four batches dirty well over the 1,000 pages SQLite checkpoints at. */
const FILLER = 'x'.repeat(3_000);

function batches(): DerivedBatch[] {
  return Array.from({ length: BATCHES }, (_, b) => ({
    fromSeq: b * 10,
    to: { seq: (b + 1) * 10, globalHash: `h${b + 1}`, size: (b + 1) * 10, version: 'v1' },
    changes: Array.from({ length: ROWS_A_BATCH }, (_, i) => {
      const key = `k${(b * ROWS_A_BATCH + i) * 7919 % 100_003}`;
      return { view: 'ledger', key, row: { key, order: b * ROWS_A_BATCH + i, open: i % 2 === 0, body: { n: i, filler: FILLER } } };
    }),
  }));
}

function opened() {
  const database = openTempDatabase();
  const tables = new SqliteDerivedTables(database.db, { checkpointDelayMs: 0 });
  const fileBytes = () => fs.statSync(database.file).size;
  const autocheckpoint = () => database.sqlite.pragma('wal_autocheckpoint', { simple: true });
  return { database, tables, fileBytes, autocheckpoint };
}

describe('derived batches with the checkpoints put off', () => {
  it('writes nothing into the database file until the catch-up ends, then checkpoints once, and the rows and digests are those written one checkpoint at a time', async () => {
    const plain = opened();
    await plain.tables.reset('v1');
    const plainBefore = plain.fileBytes();
    for (const batch of batches()) expect(await plain.tables.advance(batch)).toBe(true);
    // Without the deferral SQLite checkpointed on the way: the file took the rows.
    expect(plain.fileBytes()).toBeGreaterThan(plainBefore);

    const deferred = opened();
    await deferred.tables.reset('v1');
    const before = deferred.fileBytes();
    await deferred.tables.deferUpkeep(async () => {
      expect(deferred.autocheckpoint()).toBe(DEFERRED_CHECKPOINT_PAGES);
      for (const batch of batches()) expect(await deferred.tables.advance(batch)).toBe(true);
    });
    // Every batch committed to the log alone; none was checkpointed into the file.
    expect(deferred.fileBytes()).toBe(before);
    expect(await deferred.tables.cursor()).toEqual(await plain.tables.cursor());
    await deferred.tables.upkeepSettled;
    expect(deferred.fileBytes()).toBeGreaterThan(before);
    expect(deferred.autocheckpoint()).toBe(WAL_AUTOCHECKPOINT_PAGES);

    expect(await deferred.tables.digests()).toEqual(await plain.tables.digests());
    const all = { direction: 'asc', limit: 10_000 } as const;
    expect(await deferred.tables.list('ledger', all)).toEqual(await plain.tables.list('ledger', all));
  });

  it('shares one deferral between catch-ups that overlap, and checkpoints after the last', async () => {
    const { tables, autocheckpoint } = opened();
    await tables.reset('v1');
    const [first, second] = batches();
    let release = () => {};
    const held = tables.deferUpkeep(() => new Promise<void>((resolve) => (release = resolve)));
    await tables.deferUpkeep(async () => void (await tables.advance(first!)));
    expect(autocheckpoint()).toBe(DEFERRED_CHECKPOINT_PAGES);
    await tables.advance(second!);
    release();
    await held;
    await tables.upkeepSettled;
    expect(autocheckpoint()).toBe(WAL_AUTOCHECKPOINT_PAGES);
  });
});

describe('the process\'s other connections to the file while checkpoints are put off', () => {
  // SQLite checkpoints at the commit of whichever connection takes the log past its threshold: a
  // lease renewed right after a start's catch-up once copied the whole log into the file on the
  // event loop before the server could answer.
  it('checkpoints nothing on a lease or budget round written during the deferral, and as SQLite\'s default after it', async () => {
    const { database, tables, fileBytes } = opened();
    await tables.reset('v1');
    const leases = new SqliteLeases(database.file);
    const slots = SqliteBudgetSlots.beside(database)!;
    const round = (nowMs: number) => slots.round({ account: 'acct', holder: 'h1', nowMs, holdMs: 10_000, asks: [{ family: 'refunds', need: 1, want: 1, slots: 4, capacity: 20 }] });
    try {
      await leases.acquire('ticker', 'h1', 10_000);
      await round(1_000);
      const before = fileBytes();
      let release = () => {};
      const held = tables.deferUpkeep(() => new Promise<void>((resolve) => (release = resolve)));
      for (const batch of batches()) expect(await tables.advance(batch)).toBe(true);
      // The log holds well over 1,000 pages: each of these commits would have checkpointed it.
      expect(await leases.acquire('reconciler', 'h1', 10_000)).not.toBeNull();
      await round(2_000);
      expect(fileBytes()).toBe(before);
      release();
      await held;
      await tables.upkeepSettled;
      const checkpointed = fileBytes();
      expect(checkpointed).toBeGreaterThan(before);

      // After it, a lease's commit checkpoints a log past 1,000 pages again (written here with the
      // journal's connection's own checkpoints off for the while).
      const { sqlite } = database;
      sqlite.pragma('wal_autocheckpoint = 0');
      sqlite.exec('CREATE TABLE filler (body TEXT)');
      const insert = sqlite.prepare('INSERT INTO filler (body) VALUES (?)');
      sqlite.transaction(() => {
        for (let i = 0; i < 1_500; i++) insert.run(FILLER);
      })();
      sqlite.pragma(`wal_autocheckpoint = ${WAL_AUTOCHECKPOINT_PAGES}`);
      expect(fileBytes()).toBe(checkpointed);
      expect(await leases.acquire('signer', 'h1', 10_000)).not.toBeNull();
      expect(fileBytes()).toBeGreaterThan(checkpointed);
    } finally {
      await leases.close();
      await slots.close();
    }
  });
});
