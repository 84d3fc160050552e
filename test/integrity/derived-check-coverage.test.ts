import { afterEach, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { SqliteDerivedTables } from '../../db/derived-store.ts';
import { SqliteJournal } from '../../db/journal-store.ts';
import { openDatabase, type OpenDatabase } from '../../db/open.ts';
import { DIGEST_MARK_EVERY } from '../../db/port/derived.ts';
import { WholeJournalPass, viewsPassParts, WholePassCounts } from '../../server/integrity/whole-pass.ts';
import { Views } from '../../server/views/views.ts';
import { cleanUpDatabases, fakeClock, makeTempDir } from '../support/db-journals.ts';
import { refundChain, refundEffectId } from '../support/ledger-journal.ts';
import { buildChain } from '../support/entries.ts';
import { CONFIG_CHAIN_ID } from '../../shared/entries.ts';
import { tamper } from '../support/tamper.ts';

// The background check promises that a derived row edited under the server, which changes what a
// page shows, fails the views closed. Rows the pages read that are not one chain's own row (the
// board's totals, the wait counts, rows whose key is no chain) must be held against the journal too.

const opened: OpenDatabase[] = [];
afterEach(() => {
  for (const o of opened.splice(0)) o.close();
  cleanUpDatabases();
});

const REFUNDS = DIGEST_MARK_EVERY / 4;
const quiet = { fatal: () => {}, error: () => {} };

function viewsOver(file: string) {
  const o = openDatabase(file);
  opened.push(o);
  const journal = new SqliteJournal({ db: o.db, ...fakeClock() });
  const tables = new SqliteDerivedTables(o.db);
  const views = new Views({ journal, inboxName: 'inbox', nowMs: () => 0, log: quiet, derived: tables });
  return { journal, tables, views };
}

function passOver(views: Views) {
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

/** A journal file of 2,500 committed refunds (a mark at seq 10,000), its tables written by the views. */
async function markedFile(): Promise<string> {
  const file = join(makeTempDir(), 'interlock.sqlite');
  const { journal, tables, views } = viewsOver(file);
  for (let from = 1; from <= REFUNDS; from += 500) {
    await journal.appendSealed(Array.from({ length: 500 }, (_, i) => refundChain(from + i)).flat());
  }
  expect(await views.replayAtStart()).toBeNull();
  expect((await tables.marks()).map((mark) => mark.seq)).toEqual([DIGEST_MARK_EVERY]);
  opened.pop()?.close();
  return file;
}

// Each case folds 10,000 entries into the views' tables and passes over them at a quarter of a core.
describe('derived rows the pages read, edited on disk', { timeout: 60_000 }, () => {
  it('the board’s totals row edited: the scoreboard answers the edited count, and the check finds it', async () => {
    const file = await markedFile();
    tamper(file, (s) => expect(s.prepare("UPDATE derived_rows SET body = json_set(body, '$.board.requests', 7) WHERE view = 'scoreboard.totals'").run().changes).toBe(1));
    const { views } = viewsOver(file);
    expect(await views.replayAtStart()).toBeNull();
    // What finance is shown after the restart: the edited total, where the journal holds 2,500 requests.
    const shown = (await (await views.current()).scoreboard.board()).requests;
    const { pass, counts } = passOver(views);
    const clean = await pass.run();
    expect({ shown, clean, mismatches: counts.derivedMismatches }).toEqual({ shown: 7, clean: false, mismatches: 1 });
  });

  it('a ledger row added under a key that is no chain: the check finds it', async () => {
    const file = await markedFile();
    tamper(file, (s) => expect(s.prepare("INSERT INTO derived_rows (view, key, ord, open, body) SELECT view, 'zz-not-a-chain', ord, open, json_set(body, '$.amount_asked_minor', 999999) FROM derived_rows WHERE view = 'ledger' AND key = ?").run(refundEffectId(REFUNDS)).changes).toBe(1));
    const { views } = viewsOver(file);
    expect(await views.replayAtStart()).toBeNull();
    // The ledger's totals count the row that no request of the journal made.
    const totals = await (await views.current()).ledger.totals({}, (login) => login);
    expect(JSON.stringify(totals)).toContain('999999');
    const { pass, counts } = passOver(views);
    expect(await pass.run()).toBe(false);
    expect(counts.derivedMismatches).toBe(1);
  });

  it('a row of a request that moved after the newest mark, edited: the ledger shows it and the check finds it', async () => {
    const file = join(makeTempDir(), 'interlock.sqlite');
    const { journal, tables, views } = viewsOver(file);
    const late = refundChain(1, ['succeeded']);
    await journal.appendSealed(late.slice(0, 4));
    for (let from = 2; from <= REFUNDS; from += 500) {
      await journal.appendSealed(Array.from({ length: Math.min(500, REFUNDS + 1 - from) }, (_, i) => refundChain(from + i)).flat());
    }
    expect(await views.replayAtStart()).toBeNull();
    expect((await tables.marks()).map((mark) => mark.seq)).toEqual([DIGEST_MARK_EVERY]);
    // Refund 1 is confirmed after the mark: its rows are written past it.
    await journal.appendSealed(late.slice(4));
    expect((await views.current()).seq).toBe(DIGEST_MARK_EVERY + 1);
    tamper(file, (s) => expect(s.prepare("UPDATE derived_rows SET body = json_set(body, '$.amount_asked_minor', 999999) WHERE view = 'ledger' AND key = ?").run(refundEffectId(1)).changes).toBe(1));
    const row = await (await views.current()).ledger.rowOf(refundEffectId(1), (login) => login);
    expect(JSON.stringify(row)).toContain('999999');
    const { pass, counts } = passOver(views);
    const clean = await pass.run();
    expect({ clean, mismatches: counts.derivedMismatches }).toEqual({ clean: false, mismatches: 1 });
  });

  it('the config’s reloads are recomputed at the mark: they agree, and a mark’s reloads digest rewritten is found', async () => {
    const file = join(makeTempDir(), 'interlock.sqlite');
    const { journal, tables, views } = viewsOver(file);
    const reload = (sha: string, added: string[]) => ['CONFIG', { at_ms: 1_000, sha256: sha.repeat(64), people_added: added, people_removed: [], joined: [], left: [] }] as const;
    await journal.appendSealed(buildChain(CONFIG_CHAIN_ID, [reload('a', []), reload('b', ['dee'])]));
    for (let from = 1; from <= REFUNDS; from += 500) {
      await journal.appendSealed(Array.from({ length: 500 }, (_, i) => refundChain(from + i)).flat());
    }
    expect(await views.replayAtStart()).toBeNull();
    const [mark] = await tables.marks();
    expect(mark?.digests.find((digest) => digest.view === 'config.reloads')?.rows).toBe(2);
    const { pass, counts } = passOver(views);
    expect(await pass.run()).toBe(true);
    tamper(file, (s) => expect(s.prepare("UPDATE derived_marks SET sum = ? WHERE view = 'config.reloads'").run('1'.repeat(64)).changes).toBe(1));
    expect(await pass.run()).toBe(false);
    expect({ checks: counts.derivedChecks, mismatches: counts.derivedMismatches }).toEqual({ checks: 1, mismatches: 1 });
  });
});
