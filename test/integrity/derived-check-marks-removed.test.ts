import { describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { SqliteDerivedTables } from '../../db/derived-store.ts';
import { SqliteJournal } from '../../db/journal-store.ts';
import type { DerivedRow } from '../../db/port/derived.ts';
import { DerivedCheck, DerivedMismatchError, MARKS } from '../../server/integrity/derived-check.ts';
import { fakeClock, makeTempDir } from '../support/db-journals.ts';
import { derivedCheckFiles, passOver } from '../support/derived-check-world.ts';
import { tamper } from '../support/tamper.ts';

// docs/operators/integrity.md: a row edited, added or removed in derived_rows is found by the sum of
// the rows against the digests, which needs no mark: it runs whenever the tables have a cursor.
// Tables whose cursor passed a multiple of 10,000 seqs recorded a mark there in the same
// transaction: a newest mark missing (marks deleted) is itself a difference, failing closed.

const { open, viewsOver, markedFile } = derivedCheckFiles();

describe('the derived tables of 10,000 entries with their marks deleted', { timeout: 90_000 }, () => {
  it('the board’s totals edited: the scoreboard shows it and the background pass finds it', async () => {
    const file = await markedFile();
    tamper(file, (s) => {
      expect(s.prepare("UPDATE derived_rows SET body = json_set(body, '$.board.requests', 7) WHERE view = 'scoreboard.totals'").run().changes).toBe(1);
      expect(s.prepare('DELETE FROM derived_marks').run().changes).toBeGreaterThan(0);
    });
    const { views } = viewsOver(file);
    expect(await views.replayAtStart()).toBeNull();
    const shown = (await (await views.current()).scoreboard.board()).requests;

    const { pass, counts } = passOver(views);
    const clean = await pass.run();
    // The journal holds 10,000 entries and 2,500 requests; finance is shown 7.
    expect({ shown, clean, mismatches: counts.derivedMismatches }).toEqual({ shown: 7, clean: false, mismatches: 1 });
  });
});

/** Tables on a file of their own advanced to `seqs` (a mark at each multiple of 10,000), a row in each batch. */
async function tablesTo(seqs: readonly number[]) {
  const file = join(makeTempDir(), 'interlock.sqlite');
  const o = open(file);
  const tables = new SqliteDerivedTables(o.db);
  let from = 0;
  for (const [k, seq] of seqs.entries()) {
    const row: DerivedRow = { key: `k${k}`, order: k, open: false, body: { n: k } };
    expect(await tables.advance({ fromSeq: from, to: { seq, globalHash: seq.toString(16).padStart(64, '0'), size: seq, version: 'v' }, changes: [{ view: 'ledger', key: row.key, row }] })).toBe(true);
    from = seq;
  }
  const check = new DerivedCheck(new SqliteJournal({ db: o.db, ...fakeClock() }), tables, []);
  return { file, tables, check };
}

/** The check run to its end: the mismatch it throws, or null. */
async function mismatchOf(check: DerivedCheck): Promise<DerivedMismatchError | null> {
  if (!(await check.begin())) return null;
  while (!check.finished) await check.step(() => true);
  try {
    check.compare();
    return null;
  } catch (error) {
    if (error instanceof DerivedMismatchError) return error;
    throw error;
  }
}

describe('the derived check with no mark to hold the tables against', () => {
  it('sums the rows of tables of fewer than 10,000 entries: a row edited there is found', async () => {
    const { file, check } = await tablesTo([400, 900]);
    tamper(file, (s) => expect(s.prepare("UPDATE derived_rows SET body = json_set(body, '$.n', 7) WHERE view = 'ledger' AND key = 'k1'").run().changes).toBe(1));
    const found = await mismatchOf(check);
    expect({ view: found?.view, seq: found?.seq, marked: check.seq }).toEqual({ view: 'ledger', seq: 900, marked: null });
  });

  it('holds tables of fewer than 10,000 entries untouched as agreeing, and tables never built as nothing to check', async () => {
    expect(await mismatchOf((await tablesTo([400, 900])).check)).toBeNull();
    const never = await tablesTo([]);
    expect(await never.check.begin()).toBe(false);
  });

  it('finds every mark deleted from tables past 10,000 entries, their rows untouched', async () => {
    const { file, check } = await tablesTo([9_000, 10_500, 12_000]);
    tamper(file, (s) => expect(s.prepare('DELETE FROM derived_marks').run().changes).toBeGreaterThan(0));
    const found = await mismatchOf(check);
    expect({ view: found?.view, seq: found?.seq }).toEqual({ view: MARKS, seq: 12_000 });
    expect(found?.message).toContain('a mark was recorded at seq 10000 or after, but none is');
  });

  it('finds the newest marks deleted while an older one is left', async () => {
    const { file, tables, check } = await tablesTo([10_000, 20_000, 30_500]);
    tamper(file, (s) => expect(s.prepare('DELETE FROM derived_marks WHERE seq > 10000').run().changes).toBeGreaterThan(0));
    expect((await tables.marks()).map(({ seq }) => seq)).toEqual([10_000]);
    const found = await mismatchOf(check);
    expect(found?.message).toContain('a mark was recorded at seq 30000 or after, but the newest is at seq 10000');
  });

  it('holds tables past 10,000 entries with every mark kept as agreeing', async () => {
    expect(await mismatchOf((await tablesTo([9_000, 10_500, 20_000, 29_999])).check)).toBeNull();
  });
});
