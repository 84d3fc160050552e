import { afterEach, expect } from 'vitest';
import { copyFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bytesHash, moveDigestBy, storedRowBytes } from '../../db/derived-digest.ts';
import { SqliteDerivedTables } from '../../db/derived-store.ts';
import { SqliteJournal } from '../../db/journal-store.ts';
import { openDatabase, type OpenDatabase } from '../../db/open.ts';
import { DIGEST_MARK_EVERY } from '../../db/port/derived.ts';
import { WholeJournalPass, viewsPassParts, WholePassCounts } from '../../server/integrity/whole-pass.ts';
import { Views, type ViewsLog } from '../../server/views/views.ts';
import type { Entry } from '../../shared/entries.ts';
import { cleanUpDatabases, fakeClock, makeTempDir } from './db-journals.ts';
import { refundChain } from './ledger-journal.ts';
import { tamper } from './tamper.ts';

// The world of the derived tables' check: a journal of 2,500 refunds (10,000 entries, so a mark at
// seq 10,000) in a real SQLite file, the views writing their tables beside it, the background pass
// over them, and the edits an attacker with write access to the file makes under them.

/** Refunds of four entries each: 10,000 entries, the first mark. */
export const REFUNDS = DIGEST_MARK_EVERY / 4;

const quiet: ViewsLog = { fatal: () => {}, error: () => {} };

/**
 * Seals the 2,500 refunds in batches of 500. With `late` (refund 1's chain), refund 1 is sealed
 * first without its confirmation (entries 5 on), which the caller appends after the mark.
 */
export async function appendRefunds(journal: SqliteJournal, late?: readonly Entry[]): Promise<void> {
  if (late === undefined) {
    for (let from = 1; from <= REFUNDS; from += 500) {
      await journal.appendSealed(Array.from({ length: 500 }, (_, i) => refundChain(from + i)).flat());
    }
    return;
  }
  await journal.appendSealed(late.slice(0, 4));
  for (let from = 2; from <= REFUNDS; from += 500) {
    await journal.appendSealed(Array.from({ length: Math.min(500, REFUNDS + 1 - from) }, (_, i) => refundChain(from + i)).flat());
  }
}

/**
 * The refunds sealed with refund 1's confirmation held back, the views caught up (a mark at seq
 * 10,000), then refund 1 confirmed after the mark (seq 10,001).
 */
export async function confirmedPastTheMark<W extends { journal: SqliteJournal; tables: SqliteDerivedTables; views: Views }>(world: W): Promise<W> {
  const { journal, tables, views } = world;
  const late = refundChain(1, ['succeeded']);
  await appendRefunds(journal, late);
  expect(await views.replayAtStart()).toBeNull();
  expect((await tables.marks()).map((mark) => mark.seq)).toEqual([DIGEST_MARK_EVERY]);
  // Refund 1 is confirmed after the mark: its rows are written past it.
  await journal.appendSealed(late.slice(4));
  expect((await views.current()).seq).toBe(DIGEST_MARK_EVERY + 1);
  return world;
}

/** The background pass over the views, checking their tables, without waits between slices. */
export function passOver(views: Views) {
  const counts = new WholePassCounts();
  const pass = new WholeJournalPass({
    ...viewsPassParts(views),
    checkpointProblem: async () => null,
    derivedCheck: () => views.derivedCheck(),
    counts,
    periodMs: 60_000,
    log: { warn: () => {} },
    sleep: async () => {},
  });
  return { pass, counts };
}

/** The journal, tables and views over one file. */
export function viewsOn(opened: OpenDatabase, log: ViewsLog = quiet) {
  const journal = new SqliteJournal({ db: opened.db, ...fakeClock() });
  const tables = new SqliteDerivedTables(opened.db);
  const views = new Views({ journal, inboxName: 'inbox', nowMs: () => 0, log, derived: tables });
  return { journal, tables, views };
}

/** Files opened by a suite's cases, each closed (and the temporary folders removed) after its case. */
/** The marked file this process built, copied for each case that asks for one (`markedFile`). */
let markedTemplate: Promise<string> | undefined;

export function derivedCheckFiles() {
  const opened: OpenDatabase[] = [];
  afterEach(() => {
    for (const o of opened.splice(0)) o.close();
    cleanUpDatabases();
  });

  /** Opens `file`, closed after the case. */
  function open(file: string): OpenDatabase {
    const o = openDatabase(file);
    opened.push(o);
    return o;
  }

  /** The journal, tables and views over `file`, closed after the case. */
  function viewsOver(file: string) {
    return viewsOn(open(file));
  }

  /**
   * A journal file of 2,500 committed refunds (a mark at seq 10,000), its tables written by the
   * views, closed: a copy of the one this process built first (each case edits its own copy).
   */
  async function markedFile(): Promise<string> {
    markedTemplate ??= buildMarked();
    const template = await markedTemplate;
    const file = join(makeTempDir(), 'interlock.sqlite');
    for (const suffix of ['', '-wal', '-shm']) {
      if (existsSync(template + suffix)) copyFileSync(template + suffix, file + suffix);
    }
    return file;
  }

  /** Folds the 10,000 entries once: each case doing it took 5 to 8 s of a loaded run. */
  async function buildMarked(): Promise<string> {
    const dir = mkdtempSync(join(tmpdir(), 'interlock-marked-'));
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, 'interlock.sqlite');
    const { journal, tables, views } = viewsOver(file);
    await appendRefunds(journal);
    expect(await views.replayAtStart()).toBeNull();
    expect((await tables.marks()).map((mark) => mark.seq)).toEqual([DIGEST_MARK_EVERY]);
    opened.pop()?.close();
    return file;
  }

  return { open, viewsOver, markedFile };
}

/**
 * The ledger row of `id` edited on disk to ask 999,999, and the ledger's running digest moved by
 * the same row so that the digest still sums the rows: only the journal can tell.
 */
export function editLedgerRowWithDigest(file: string, id: string): void {
  tamper(file, (s) => {
    const row = s.prepare("SELECT ord, open, body FROM derived_rows WHERE view = 'ledger' AND key = ?").get(id) as { ord: number; open: number; body: string };
    const body = JSON.stringify({ ...JSON.parse(row.body), amount_asked_minor: 999999 }, Object.keys(JSON.parse(row.body)).sort());
    const digest = s.prepare("SELECT sum FROM derived_digests WHERE view = 'ledger'").get() as { sum: string };
    const before = bytesHash(storedRowBytes('ledger', id, row.ord, row.open === 1, row.body));
    const after = bytesHash(storedRowBytes('ledger', id, row.ord, row.open === 1, body));
    expect(s.prepare("UPDATE derived_rows SET body = ? WHERE view = 'ledger' AND key = ?").run(body, id).changes).toBe(1);
    expect(s.prepare("UPDATE derived_digests SET sum = ? WHERE view = 'ledger'").run(moveDigestBy(digest.sum, after, before)).changes).toBe(1);
  });
}
