import { afterEach, describe, expect, it } from 'vitest';
import { connectionLock } from '../../db/connection.ts';
import { openDatabase } from '../../db/open.ts';
import { storageOver } from '../../db/sqlite-storage.ts';
import { cleanUpDatabases, tempDbFile } from '../support/db-journals.ts';

// The journal opens its transactions by hand and may await inside one, under the lock of its
// connection. Sessions, grants and checkpoints live on the same connection: each of their calls
// takes that lock, so none lands inside a journal transaction, to be committed or rolled back with it.

afterEach(() => cleanUpDatabases());

const SESSION = { name: 'ana', csrfToken: 'csrf', createdAtMs: 1_000, lastSeenAtMs: 1_000 };

/** Open a transaction on the storage's connection as the journal does, let `during` start, then roll back. */
async function duringARolledBackTransaction(during: (storage: ReturnType<typeof storageOver>) => Promise<unknown>) {
  const database = openDatabase(tempDbFile());
  const storage = storageOver(database);
  await storage.sessions.create('kept', SESSION);
  let settled = false;
  let settledInside = false;
  let call: Promise<unknown> = Promise.resolve();
  await connectionLock(database.sqlite).run(async () => {
    database.sqlite.exec('BEGIN IMMEDIATE');
    call = during(storage).then(() => {
      settled = true;
    });
    for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
    settledInside = settled;
    database.sqlite.exec('ROLLBACK');
  });
  await call;
  return { storage, settledInside, close: () => storage.close() };
}

describe("the stores beside the journal take its connection's lock", () => {
  it('a session ended while a journal transaction is open waits for it, and is not undone by its rollback', async () => {
    const { storage, settledInside, close } = await duringARolledBackTransaction((s) => s.sessions.end('kept'));
    expect(settledInside).toBe(false);
    expect(await storage.sessions.get('kept')).toBeNull();
    await close();
  });

  it('a checkpoint and a grant written meanwhile are kept', async () => {
    const { storage, close } = await duringARolledBackTransaction(async (s) => {
      await s.checkpoints.add({ epoch: 0, size: 1, head: 'a'.repeat(64), note: 'note', signedAtMs: 1 });
      await s.grants(() => 5).grant('lease-1');
    });
    expect((await storage.checkpoints.latest())?.size).toBe(1);
    expect(await storage.grants(() => 6).describe('lease-1')).not.toBeNull();
    await close();
  });

  it("start-up's checks on the stored rows wait too: a guard dropped in a transaction rolled back is not reported", async () => {
    const database = openDatabase(tempDbFile());
    const storage = storageOver(database);
    let problems: Promise<unknown[]> = Promise.resolve([]);
    await connectionLock(database.sqlite).run(async () => {
      database.sqlite.exec('BEGIN IMMEDIATE');
      database.sqlite.exec('DROP TRIGGER entries_no_update');
      problems = storage.integrity.guardProblems();
      for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
      database.sqlite.exec('ROLLBACK');
    });
    expect(await problems).toEqual([]);
    await storage.close();
  });
});
