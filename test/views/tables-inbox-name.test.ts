import { afterEach, describe, expect, it } from 'vitest';
import { SqliteDerivedTables } from '../../db/derived-store.ts';
import { SqliteJournal } from '../../db/journal-store.ts';
import type { JournalStore } from '../../server/journal/store.ts';
import { LedgerProjection } from '../../server/ledger/projection.ts';
import { Views } from '../../server/views/views.ts';
import { cleanUpDatabases, openTempDatabase } from '../support/db-journals.ts';
import { refundChain } from '../support/ledger-journal.ts';

// The ledger's rows depend on the inbox's name (only requests of this inbox are rows), and
// `inbox_name` changes with a restart. Tables folded under one name are not a fold of the
// journal under another: the ledger a server of another name answers must be its own fold.

afterEach(cleanUpDatabases);

const quiet = { fatal: () => {}, error: () => {} };
const displayName = (login: string) => login;

async function foldedWhole(journal: JournalStore, inboxName: string): Promise<LedgerProjection> {
  const projection = new LedgerProjection(inboxName);
  for (const { seq, entry } of await journal.scan(0, 1_000_000)) projection.note(entry, seq);
  return projection;
}

describe('the ledger table across a change of inbox name', () => {
  it('a server restarted under another inbox_name answers its own inbox’s ledger, not the tables of the old name', async () => {
    const { file, db } = openTempDatabase();
    const journal = new SqliteJournal({ db, wallClockMs: () => 0 });
    await journal.appendSealed([...refundChain(1, ['succeeded']), ...refundChain(2), ...refundChain(3, ['succeeded'])]);

    const first = new Views({ journal, inboxName: 'inbox', nowMs: () => 0, log: quiet, derived: new SqliteDerivedTables(db) });
    expect(await first.replayAtStart()).toBeNull();
    expect((await (await first.current()).ledger.page({}, { limit: 100 }, displayName)).rows).toHaveLength(3);

    // The same file, a server started with `inbox_name: other`.
    const reopened = openTempDatabase(file);
    const journal2 = new SqliteJournal({ db: reopened.db, wallClockMs: () => 0 });
    const second = new Views({ journal: journal2, inboxName: 'other', nowMs: () => 0, log: quiet, derived: new SqliteDerivedTables(reopened.db) });
    expect(await second.replayAtStart()).toBeNull();
    const { ledger } = await second.current();
    const whole = await foldedWhole(journal2, 'other');
    expect(whole.page({}, { limit: 100 }, displayName).rows).toHaveLength(0);
    expect(await ledger.page({}, { limit: 100 }, displayName)).toEqual(whole.page({}, { limit: 100 }, displayName));
    expect(await ledger.totals({}, displayName)).toEqual(whole.totals({}, displayName));
  });

  it('two servers of different inboxes on one file each answer their own ledger', async () => {
    const { file, db } = openTempDatabase();
    const journal = new SqliteJournal({ db, wallClockMs: () => 0 });
    await journal.appendSealed([...refundChain(1), ...refundChain(2, ['succeeded'])]);
    const mine = new Views({ journal, inboxName: 'inbox', nowMs: () => 0, log: quiet, derived: new SqliteDerivedTables(db) });
    expect(await mine.replayAtStart()).toBeNull();

    const other = openTempDatabase(file);
    const theirs = new Views({ journal: new SqliteJournal({ db: other.db, wallClockMs: () => 0 }), inboxName: 'finance-eu', nowMs: () => 0, log: quiet, derived: new SqliteDerivedTables(other.db) });
    expect(await theirs.replayAtStart()).toBeNull();
    const page = await (await theirs.current()).ledger.page({}, { limit: 100 }, displayName);
    expect(page.rows.map((row) => row.effect_id)).toEqual([]);
  });

  it('a server restarted under another inbox_name keeps answering when Stripe’s late word on an old request lands', async () => {
    const { file, db } = openTempDatabase();
    const journal = new SqliteJournal({ db, wallClockMs: () => 0 });
    const late = refundChain(1, ['pending', 'succeeded']);
    await journal.appendSealed([...late.slice(0, 5), ...refundChain(2, ['succeeded'])]);
    const first = new Views({ journal, inboxName: 'inbox', nowMs: () => 0, log: quiet, derived: new SqliteDerivedTables(db) });
    expect(await first.replayAtStart()).toBeNull();

    const reopened = openTempDatabase(file);
    const journal2 = new SqliteJournal({ db: reopened.db, wallClockMs: () => 0 });
    const second = new Views({ journal: journal2, inboxName: 'other', nowMs: () => 0, log: quiet, derived: new SqliteDerivedTables(reopened.db) });
    expect(await second.replayAtStart()).toBeNull();
    await journal2.appendSealed(late.slice(5));
    await expect(second.current()).resolves.toMatchObject({ seq: 11 });
  });
});
