import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import type { SqliteDerivedTables } from '../../db/derived-store.ts';
import type { SqliteJournal } from '../../db/journal-store.ts';
import { openDatabase, type OpenDatabase } from '../../db/open.ts';
import { DIGEST_MARK_EVERY, type DerivedRow } from '../../db/port/derived.ts';
import { DerivedCheck, DerivedMismatchError } from '../../server/integrity/derived-check.ts';
import { ledgerRefold } from '../../server/ledger/refold.ts';
import type { Views } from '../../server/views/views.ts';
import { cleanUpDatabases, makeTempDir } from '../support/db-journals.ts';
import { appendRefunds, editLedgerRowWithDigest, REFUNDS, viewsOn } from '../support/derived-check-world.ts';
import { refundChain, refundEffectId } from '../support/ledger-journal.ts';

// The derived check holds each chain's row as the table holds it now against the chain folded
// through the tables' cursor, read before the rows of each slice. A server writes on while the
// check runs: a chain whose entries past that cursor the tables took before its row was read has a
// row newer than the cursor; it is left to the next pass, not reported as a table that differs. A
// chain made after the mark is held against the journal the same way.

/** 2,500 refunds (10,000 entries, a mark at 10,000), refund 1 not yet confirmed: built once for the cases below, which run in order. */
let world: { file: string; opened: OpenDatabase; journal: SqliteJournal; tables: SqliteDerivedTables; views: Views };
const late = refundChain(1, ['succeeded']);

beforeAll(async () => {
  const file = join(makeTempDir(), 'interlock.sqlite');
  const opened = openDatabase(file);
  const { journal, tables, views } = viewsOn(opened);
  await appendRefunds(journal, late);
  expect(await views.replayAtStart()).toBeNull();
  expect((await tables.newestMark())?.seq).toBe(DIGEST_MARK_EVERY);
  world = { file, opened, journal, tables, views };
}, 90_000);

afterAll(() => {
  world.opened.close();
  cleanUpDatabases();
});

describe('the derived check while chains move after the mark', { timeout: 90_000 }, () => {
  it('a request confirmed after the check read the tables’ cursor, before it read its ledger row, is no mismatch', async () => {
    const { journal, tables, views } = world;

    // The server confirms refund 1, and its tables take it, just before the check reads its row:
    // the row read is newer than the cursor the check read before the slice.
    const id = refundEffectId(1);
    const seen: { confirmed: { cursorBefore: number | undefined; rowBefore: DerivedRow | null } | null } = { confirmed: null };
    const writingOn = {
      cursor: () => tables.cursor(),
      newestMark: () => tables.newestMark(),
      snapshot: () => tables.snapshot(),
      async get(view: string, key: string): Promise<DerivedRow | null> {
        if (view === 'ledger' && key === id && seen.confirmed === null) {
          seen.confirmed = { cursorBefore: (await tables.cursor())?.seq, rowBefore: await tables.get(view, key) };
          await journal.appendSealed(late.slice(4));
          expect((await views.current()).seq).toBe(DIGEST_MARK_EVERY + 1);
          expect((await tables.cursor())?.seq).toBe(DIGEST_MARK_EVERY + 1);
        }
        return tables.get(view, key);
      },
    };
    const check = new DerivedCheck(journal, writingOn, [ledgerRefold('inbox')]);
    expect(await check.begin()).toBe(true);
    while (!check.finished) await check.step(() => true);
    expect(() => check.compare()).not.toThrow();
    // The chain moved under the check: its row changed between the cursor read and the row read.
    expect(seen.confirmed).toMatchObject({ cursorBefore: DIGEST_MARK_EVERY });
    expect(await tables.get('ledger', id)).not.toEqual(seen.confirmed?.rowBefore);
  });

  it('a request made after the mark, its ledger row edited with the digest, is found at the cursor', async () => {
    const { file, journal, tables, views } = world;
    const made = refundChain(REFUNDS + 1);
    await journal.appendSealed(made);
    const cursor = (await views.current()).seq;
    expect(cursor).toBe(DIGEST_MARK_EVERY + 1 + made.length);
    const id = refundEffectId(REFUNDS + 1);
    editLedgerRowWithDigest(file, id);
    const check = new DerivedCheck(journal, tables, [ledgerRefold('inbox')]);
    expect(await check.begin()).toBe(true);
    const found = await (async () => {
      try {
        while (!check.finished) await check.step(() => true);
        check.compare();
        return null;
      } catch (error) {
        return error;
      } finally {
        check.close();
      }
    })();
    expect(found).toBeInstanceOf(DerivedMismatchError);
    expect(found).toMatchObject({ view: 'ledger', seq: cursor, effectId: id });
  });
});
