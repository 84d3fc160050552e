import { afterEach, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { SqliteDerivedTables } from '../../db/derived-store.ts';
import { bytesHash, moveDigestBy, storedRowBytes } from '../../db/derived-digest.ts';
import { SqliteJournal } from '../../db/journal-store.ts';
import { openDatabase, type OpenDatabase } from '../../db/open.ts';
import { DIGEST_MARK_EVERY } from '../../db/port/derived.ts';
import { WholeJournalPass, viewsPassParts, WholePassCounts } from '../../server/integrity/whole-pass.ts';
import { Views } from '../../server/views/views.ts';
import { cleanUpDatabases, fakeClock, makeTempDir } from '../support/db-journals.ts';
import { refundChain, refundEffectId } from '../support/ledger-journal.ts';
import { tamper } from '../support/tamper.ts';

// docs/operators/integrity.md: "What waits" names only the rows no single chain makes (the board's
// totals, the wait counts, the repairs, the outbox's indexes) as escaping the check when
// `derived_digests` is rewritten to match. A chain's own row (the ledger's) is held against the
// chain folded through the tables' cursor: a request's ledger row whose chain moved after the
// newest mark, edited together with its view's digest, is found by the pass.

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

describe('a chain row moved after the mark, edited with its digest', { timeout: 90_000 }, () => {
  it('the ledger shows the edited amount and the background pass finds it', async () => {
    const file = join(makeTempDir(), 'interlock.sqlite');
    const { journal, tables, views } = viewsOver(file);
    const late = refundChain(1, ['succeeded']);
    await journal.appendSealed(late.slice(0, 4));
    for (let from = 2; from <= REFUNDS; from += 500) {
      await journal.appendSealed(Array.from({ length: Math.min(500, REFUNDS + 1 - from) }, (_, i) => refundChain(from + i)).flat());
    }
    expect(await views.replayAtStart()).toBeNull();
    expect((await tables.marks()).map((mark) => mark.seq)).toEqual([DIGEST_MARK_EVERY]);
    // Refund 1 is confirmed after the mark: its row is written past it.
    await journal.appendSealed(late.slice(4));
    expect((await views.current()).seq).toBe(DIGEST_MARK_EVERY + 1);

    const id = refundEffectId(1);
    tamper(file, (s) => {
      const row = s.prepare("SELECT ord, open, body FROM derived_rows WHERE view = 'ledger' AND key = ?").get(id) as { ord: number; open: number; body: string };
      const body = JSON.stringify({ ...JSON.parse(row.body), amount_asked_minor: 999999 }, Object.keys(JSON.parse(row.body)).sort());
      const digest = s.prepare("SELECT sum FROM derived_digests WHERE view = 'ledger'").get() as { sum: string };
      const before = bytesHash(storedRowBytes('ledger', id, row.ord, row.open === 1, row.body));
      const after = bytesHash(storedRowBytes('ledger', id, row.ord, row.open === 1, body));
      expect(s.prepare("UPDATE derived_rows SET body = ? WHERE view = 'ledger' AND key = ?").run(body, id).changes).toBe(1);
      expect(s.prepare("UPDATE derived_digests SET sum = ? WHERE view = 'ledger'").run(moveDigestBy(digest.sum, after, before)).changes).toBe(1);
    });
    const row = await (await views.current()).ledger.rowOf(id, (login) => login);
    expect(JSON.stringify(row)).toContain('999999');

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
    const clean = await pass.run();
    expect({ clean, mismatches: counts.derivedMismatches }).toEqual({ clean: false, mismatches: 1 });
  });
});
