import { afterEach, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { SqliteDerivedTables } from '../../db/derived-store.ts';
import { SqliteJournal } from '../../db/journal-store.ts';
import { openDatabase, type OpenDatabase } from '../../db/open.ts';
import { DIGEST_MARK_EVERY, type DigestMark } from '../../db/port/derived.ts';
import { DerivedCheck } from '../../server/integrity/derived-check.ts';
import { cleanUpDatabases, fakeClock, makeTempDir } from '../support/db-journals.ts';

// docs/operators/integrity.md: the check of the derived tables holds "one chain, a page of 200
// chain ids and one sum a view" in memory, whatever the history. It checks the newest mark only;
// the marks of a long history (one every 10,000 entries, kept for ever) must not all be read into
// memory at each pass to find it.

const opened: OpenDatabase[] = [];
afterEach(() => {
  for (const o of opened.splice(0)) o.close();
  cleanUpDatabases();
});

describe('the derived check at the newest mark of a long history', () => {
  it('reads the newest mark, not every mark recorded since the tables were built', async () => {
    const file = join(makeTempDir(), 'interlock.sqlite');
    const o = openDatabase(file);
    opened.push(o);
    const tables = new SqliteDerivedTables(o.db);
    // 200 marks: the history of a journal of 2 million entries, a view's row in each batch.
    const MARKS = 200;
    for (let k = 1; k <= MARKS; k++) {
      const seq = k * DIGEST_MARK_EVERY;
      const applied = await tables.advance({
        fromSeq: (k - 1) * DIGEST_MARK_EVERY,
        to: { seq, globalHash: seq.toString(16).padStart(64, '0'), size: seq, version: 'v' },
        changes: [{ view: 'ledger', key: `k${k}`, row: { key: `k${k}`, order: k, open: false, body: { n: k } } }],
      });
      expect(applied).toBe(true);
    }
    let marksHeld = 0;
    const watched = {
      get: tables.get.bind(tables),
      cursor: tables.cursor.bind(tables),
      snapshot: tables.snapshot.bind(tables),
      marks: async (): Promise<DigestMark[]> => {
        const marks = await tables.marks();
        marksHeld = Math.max(marksHeld, marks.length);
        return marks;
      },
      newestMark: async (): Promise<DigestMark | null> => {
        const mark = await tables.newestMark();
        marksHeld = Math.max(marksHeld, mark === null ? 0 : 1);
        return mark;
      },
    };
    const journal = new SqliteJournal({ db: o.db, ...fakeClock() });
    const check = new DerivedCheck(journal, watched, []);
    expect(await check.begin()).toBe(true);
    expect(check.seq).toBe(MARKS * DIGEST_MARK_EVERY);
    check.close();
    // The check needs one mark, not every mark ever recorded.
    expect(marksHeld).toBe(1);
  });
});
