import { afterEach, describe, expect, it } from 'vitest';
import { SqliteJournal } from '../../db/journal-store.ts';
import { openDatabase, type OpenDatabase } from '../../db/open.ts';
import { WholeJournalPass, WholePassCounts } from '../../server/integrity/whole-pass.ts';
import { Views } from '../../server/views/views.ts';
import { cleanUpDatabases, effectIdOf, fakeClock, fields } from '../support/db-journals.ts';
import { tamper, writeJournal } from '../support/tamper.ts';

// The pass reads the global chain up to the head the views stood at when it began. The entry at
// that head removed with its seal, while later entries are there (the server went on writing and
// its follower already passed it), is damage only this pass can find.

const opened: OpenDatabase[] = [];
afterEach(() => {
  for (const o of opened.splice(0)) o.close();
  cleanUpDatabases();
});

describe('the background pass, the entry at the head it began at removed', () => {
  it('reports the removal instead of reading the same page forever', async () => {
    const file = await writeJournal(4);
    const server = openDatabase(file);
    opened.push(server);
    const journal = new SqliteJournal({ db: server.db, ...fakeClock() });
    const views = new Views({ journal, inboxName: 'inbox', nowMs: () => 0, log: { fatal: () => {}, error: () => {} } });
    expect(await views.replayAtStart()).toBeNull();
    const head = views.head;
    expect(head?.seq).toBe(12);
    // The server writes on; its follower applies the new entries (they link to seq 12).
    for (const kind of ['PROPOSED', 'AUTHORIZED'] as const) await journal.append(kind, effectIdOf(5), fields(kind));
    await views.current();
    expect(views.head?.seq).toBe(14);
    // Then the entry at seq 12 is removed with its seal.
    tamper(file, (s) => {
      s.prepare('DELETE FROM journal_seals WHERE seq = 12').run();
      s.prepare('DELETE FROM entries WHERE seq = 12').run();
    });
    const counts = new WholePassCounts();
    let slices = 0;
    const pass = new WholeJournalPass({
      journal: views.journal,
      report: (error) => views.report(error),
      // The head as it stood when the pass began.
      recomputedHead: () => head,
      failed: () => views.unavailable !== null,
      checkpointProblem: async () => null,
      counts,
      periodMs: 60_000,
      log: { warn: () => {} },
      sleep: () => new Promise((resolve) => setImmediate(resolve)),
      onSlice: () => {
        slices += 1;
        // A pass over 12 entries takes a handful of slices; far more is one that no longer moves.
        if (slices === 500) pass.stop();
      },
    });
    const held = await pass.run();
    expect({ held, damage: counts.damage, unavailable: views.unavailable !== null, slices: Math.min(slices, 500) }).toEqual({ held: false, damage: 1, unavailable: true, slices: expect.any(Number) });
    expect(slices).toBeLessThan(500);
  });
});
