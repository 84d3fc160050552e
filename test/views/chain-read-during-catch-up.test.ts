import { afterEach, describe, expect, it } from 'vitest';
import { SqliteJournal } from '../../db/journal-store.ts';
import { openDatabase, type OpenDatabase } from '../../db/open.ts';
import { Views } from '../../server/views/views.ts';
import { cleanUpDatabases, effectIdOf, fakeClock, fields } from '../support/db-journals.ts';
import { writeJournal } from '../support/tamper.ts';

// A chain shown or signed is read through the views (`CaughtUp.chain`), cut at the last entry they
// applied and held against the chain's tail as they verified it. Entries of that chain appended by
// a server meanwhile, and applied by a catch-up while the read is under way, are no damage.

const opened: OpenDatabase[] = [];
afterEach(() => {
  for (const o of opened.splice(0)) o.close();
  cleanUpDatabases();
});

describe('a chain read while a catch-up applies more of it', () => {
  it('is answered, and the journal does not stand failed', async () => {
    const file = await writeJournal(2);
    const server = openDatabase(file);
    const writer = openDatabase(file);
    opened.push(server, writer);
    const views = new Views({ journal: new SqliteJournal({ db: server.db, ...fakeClock() }), inboxName: 'inbox', nowMs: () => 0, log: { fatal: () => {}, error: () => {} } });
    expect(await views.replayAtStart()).toBeNull();
    // Another process on the same file appends to the chain.
    const other = new SqliteJournal({ db: writer.db, ...fakeClock() });
    const effectId = effectIdOf(1);
    const failures: string[] = [];
    for (let yields = 0; yields < 40 && views.unavailable === null; yields++) {
      const caughtUp = await views.current();
      await other.append('ESCALATED', effectId, fields('ESCALATED'));
      const catchUp = views.current().catch((error: unknown) => failures.push(String(error)));
      for (let i = 0; i < yields; i++) await Promise.resolve();
      const read = caughtUp.chain(effectId).catch((error: unknown) => {
        failures.push(String(error));
        return [];
      });
      await Promise.all([catchUp, read]);
    }
    expect(failures).toEqual([]);
    expect(views.unavailable?.corrupt.message ?? null).toBeNull();
  });
});
