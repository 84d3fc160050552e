import { describe, expect, it } from 'vitest';
import { globalHashOf } from '../../server/journal/hash.ts';
import { WholeJournalPass, WholePassCounts, viewsPassParts } from '../../server/integrity/whole-pass.ts';
import type { Views } from '../../server/views/views.ts';
import type { Storage } from '../../db/port/storage.ts';
import { checkpointAt, closeAll, journalFile, opened, refusedCheckpoint, startViews } from '../support/checkpoint-start.ts';
import { refundChain } from '../support/ledger-journal.ts';
import { resealFrom, rewriteEntry, tamper } from '../support/tamper.ts';

// Views started at a checkpoint never read the entries before it, and hold no tail for a chain
// that has not moved since: what is changed there is the background pass's to find. Refund n's
// entries are at seqs n, 50 + n, 100 + n and 150 + n; the checkpoint is at 180, the tables at 200.

/** One whole pass over the journal the views follow: true when it held. */
async function wholePass(views: Views): Promise<{ held: boolean; damage: number }> {
  const counts = new WholePassCounts();
  const pass = new WholeJournalPass({
    ...viewsPassParts(views),
    checkpointProblem: async () => null,
    counts,
    periodMs: 60_000,
    log: { warn: () => {} },
    sleep: () => new Promise((resolve) => setImmediate(resolve)),
  });
  return { held: await pass.run(), damage: counts.damage };
}

/** A journal with a checkpoint at 180, changed by `edit` with the server stopped, and views started on it. */
async function startedAfter(edit: Parameters<typeof tamper>[1]): Promise<{ views: Views; storage: Storage; refused: string | null }> {
  const file = await journalFile();
  await checkpointAt(await opened(file), 180);
  await closeAll();
  tamper(file, edit);
  const storage = await opened(file);
  const views = startViews(storage, 'checkpoint');
  return { views, storage, refused: (await views.replayAtStart())?.message ?? null };
}

describe('the background pass after a start at a checkpoint', () => {
  it('finds an entry before the checkpoint rewritten with its own seal recomputed, which the start does not read', async () => {
    // Seq 103 is refund 3's DISPATCHED, its seal recomputed over the new hash; the seals after it stay.
    const { views, refused } = await startedAfter((sqlite) => {
      rewriteEntry(sqlite, 103, { checks: { lease: null, lease_live: false, violations: [] } });
      const before = sqlite.prepare('SELECT global_hash FROM journal_seals WHERE seq = 102').pluck().get() as string;
      const hash = sqlite.prepare('SELECT hash FROM entries WHERE seq = 103').pluck().get() as string;
      sqlite.prepare('UPDATE journal_seals SET global_hash = ? WHERE seq = 103').run(globalHashOf(before, 103, hash));
    });
    expect(refused).toBeNull();
    expect(views.followed.entriesRead).toBe(20);
    expect(await wholePass(views)).toEqual({ held: false, damage: 1 });
    // The seal after it no longer follows from the one recomputed.
    expect(views.unavailable?.corrupt.seq).toBe(104);
  });

  it('replays the whole journal at start for an entry before the checkpoint rewritten with every seal after it recomputed: the checkpoint no longer holds', async () => {
    const { views, storage, refused } = await startedAfter((sqlite) => {
      rewriteEntry(sqlite, 103, { checks: { lease: null, lease_live: false, violations: [] } });
      resealFrom(sqlite, 103);
    });
    // No place to start from: every entry is read again, and the rewritten one breaks its chain's link.
    expect(views.followed.entriesRead).toBeGreaterThan(100);
    expect(refused).not.toBeNull();
    expect(await refusedCheckpoint(storage)).toMatch(/^the newest checkpoint signed the head [0-9a-f]{64} at size 180, but the seal at seq 180 is [0-9a-f]{64}: the journal was rewritten$/);
  });

  it('finds the last entry of a chain not held removed with its seal while the server runs, which the chain shown cannot tell at once', async () => {
    const file = await journalFile();
    const storage = await opened(file);
    await checkpointAt(storage, 180);
    const views = startViews(storage, 'checkpoint');
    expect(await views.replayAtStart()).toBeNull();
    const id = refundChain(3)[0]!.effect_id;
    expect(await (await views.current()).chain(id)).toHaveLength(4);
    // Refund 3's COMMITTED (seq 153) was applied before the start: no tail holds it.
    tamper(file, (sqlite) => {
      sqlite.prepare('DELETE FROM journal_seals WHERE seq = 153').run();
      sqlite.prepare('DELETE FROM entries WHERE seq = 153').run();
    });
    expect(await (await views.current()).chain(id)).toHaveLength(3);
    expect(await wholePass(views)).toEqual({ held: false, damage: 1 });
    expect(views.unavailable).not.toBeNull();
  });
});
