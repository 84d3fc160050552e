import { afterEach, describe, expect, it } from 'vitest';
import { SqliteDerivedTables } from '../../db/derived-store.ts';
import type { DerivedBatch } from '../../db/port/derived.ts';
import { SqliteJournal } from '../../db/journal-store.ts';
import type { JournalStore } from '../../server/journal/store.ts';
import { LedgerProjection } from '../../server/ledger/projection.ts';
import { Views } from '../../server/views/views.ts';
import { cleanUpDatabases, openTempDatabase } from '../support/db-journals.ts';
import { refundChain } from '../support/ledger-journal.ts';

// Two servers started together on one journal whose derived tables are missing: start-up judges
// the tables (`tablesFound`), then copies the database aside and listens, then replays (which
// resets tables it judged to rebuild). A server that judged them missing before the other built
// them must not wipe what the other built and now writes on from.

afterEach(cleanUpDatabases);

const quiet = { fatal: () => {}, error: () => {} };
const displayName = (login: string) => login;

/** Tables whose writes past the first page wait until released: a replay caught midway. */
class PausedTables extends SqliteDerivedTables {
  #release: (() => void) | null = null;
  readonly #released = new Promise<void>((resolve) => (this.#release = resolve));
  paused = false;
  override async advance(batch: DerivedBatch): Promise<boolean> {
    if (batch.fromSeq > 0) {
      this.paused = true;
      await this.#released;
    }
    return super.advance(batch);
  }
  release(): void {
    this.#release?.();
  }
}

async function foldedWhole(journal: JournalStore): Promise<LedgerProjection> {
  const projection = new LedgerProjection('inbox');
  for (const { seq, entry } of await journal.scan(0, 1_000_000)) projection.note(entry, seq);
  return projection;
}

describe('two servers starting on one file with the derived tables missing', () => {
  it('the first keeps answering its whole ledger while the second starts', async () => {
    const { file, db } = openTempDatabase();
    const journal = new SqliteJournal({ db, wallClockMs: () => 0 });
    await journal.appendSealed(Array.from({ length: 300 }, (_, i) => refundChain(i + 1, i % 2 === 0 ? ['succeeded'] : [])).flat());

    const second = openTempDatabase(file);
    const journal2 = new SqliteJournal({ db: second.db, wallClockMs: () => 0 });
    const one = new Views({ journal, inboxName: 'inbox', nowMs: () => 0, log: quiet, derived: new SqliteDerivedTables(db) });

    // Both start-ups judge the tables first: missing, for both.
    expect((await one.tablesFound()).reason).toBe('missing');
    const paused = new PausedTables(second.db);
    const two = new Views({ journal: journal2, inboxName: 'inbox', nowMs: () => 0, log: quiet, derived: paused });
    expect((await two.tablesFound()).reason).toBe('missing');
    // The first copies the database aside and replays sooner: it builds the tables and serves.
    expect(await one.replayAtStart()).toBeNull();
    // The second's replay comes after; it is caught after its first page.
    // It finds them built by then and catches up from their cursor; were it to reset them, it
    // would be caught here after its first page.
    let replayed = false;
    const replaying = two.replayAtStart().finally(() => {
      replayed = true;
    });
    while (!paused.paused && !replayed) await new Promise((resolve) => setTimeout(resolve, 5));

    // Meanwhile the first, started and serving, is asked for its ledger.
    const whole = await foldedWhole(journal);
    const { ledger } = await one.current();
    const page = await ledger.page({}, { limit: 10 }, displayName);
    paused.release();
    expect(await replaying).toBeNull();
    expect(page).toEqual(whole.page({}, { limit: 10 }, displayName));
    expect((await ledger.totals({}, displayName))).toEqual(whole.totals({}, displayName));
  });
});
