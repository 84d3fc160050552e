import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, expect } from 'vitest';
import { MemoryDerivedTables } from '../../db/memory/derived.ts';
import type { Storage } from '../../db/port/storage.ts';
import { openStorage } from '../../db/sqlite-storage.ts';
import { signCheckpoint } from '../../server/integrity/checkpoint.ts';
import { originOf } from '../../server/integrity/epoch.ts';
import { rebuildViews } from '../../server/views/rebuild.ts';
import { checkpointPosition } from '../../server/views/start-position.ts';
import { Views } from '../../server/views/views.ts';
import { checkpointKey } from './checkpoints.ts';
import { refundChain } from './ledger-journal.ts';

// Journal files of refunds with their derived tables and signed checkpoints, and views started on
// them from zero or from the newest checkpoint (server/views/start-position.ts), the ledger alone
// kept in a table. Import in a test file: the files are removed after it.

export const dir = mkdtempSync(join(tmpdir(), 'interlock-start-from-checkpoint-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const open: Storage[] = [];
afterEach(async () => {
  for (const storage of open.splice(0)) await storage.close();
});
let files = 0;

export const REFUNDS = 50;
/** Entries of the journal written: 50 refunds of 4 entries, refund n's at seqs n, 50 + n, 100 + n, 150 + n. */
export const FIRST = 4 * REFUNDS;
export const clock = { wallClockMs: () => 1_800_000_000_000 };

export async function opened(file: string): Promise<Storage> {
  const storage = await openStorage({ file });
  open.push(storage);
  return storage;
}

/** Close every storage opened so far (before a file is changed behind them). */
export async function closeAll(): Promise<void> {
  for (const storage of open.splice(0)) await storage.close();
}

/** A journal of 50 refunds, its tables written by a start from zero at `tablesAt` entries (all of them when absent). */
export async function journalFile(tablesAt = FIRST): Promise<string> {
  const file = join(dir, `journal-${++files}.sqlite`);
  const storage = await opened(file);
  const journal = storage.journal(clock);
  const chains = Array.from({ length: REFUNDS }, (_, i) => refundChain(i + 1));
  // Interleaved as traffic writes them: every refund's first entry, then every second one, ...
  const entries = [0, 1, 2, 3].flatMap((step) => chains.map((chain) => chain[step]!));
  await journal.appendSealed(entries.slice(0, tablesAt));
  expect(await startViews(storage, 'zero').replayAtStart()).toBeNull();
  await journal.appendSealed(entries.slice(tablesAt));
  return file;
}

export function startViews(storage: Storage, startFrom: 'zero' | 'checkpoint', key = checkpointKey, tailsHeldMax?: number): Views {
  return new Views({
    tailsHeldMax,
    journal: storage.journal(clock),
    inboxName: 'inbox',
    nowMs: () => 0,
    log: { fatal: () => {}, error: () => {} },
    derived: storage.derived,
    startFrom,
    checkpoints: { store: storage.checkpoints, key },
  });
}

/** Sign and keep a checkpoint at `size` entries, over `head` (the seal there unless told). */
export async function checkpointAt(storage: Storage, size: number, options: { head?: string; key?: typeof checkpointKey } = {}): Promise<void> {
  const journalId = await storage.checkpoints.ensureJournalId();
  const head = options.head ?? (await storage.checkpoints.globalHashAtSize(size)) ?? '';
  const note = signCheckpoint({ origin: originOf(journalId, 0), size, head }, options.key ?? checkpointKey);
  expect(await storage.checkpoints.add({ epoch: 0, size, head, note, signedAtMs: 0 })).toBe(true);
}

/** The tables' digests as a rebuild from the whole journal gives them. */
export async function rebuilt(storage: Storage) {
  return (await rebuildViews({ journal: storage.journal(clock), tables: new MemoryDerivedTables(), inboxName: 'inbox' })).digests;
}

/**
 * Why the newest checkpoint is no place to start from. The views do not start from it: they replay
 * and verify the whole journal instead (start-up's check of the checkpoints then refuses the start
 * with its own code, server/integrity/checkpoints.ts); "held" when it is a place to start.
 */
export async function refusedCheckpoint(storage: Storage, key = checkpointKey): Promise<string> {
  const views = startViews(storage, 'checkpoint', key);
  const replayed = await views.replayAtStart();
  if (replayed === null) expect(views.followed.entriesRead).toBe(FIRST);
  return checkpointPosition(storage.journal(clock), { store: storage.checkpoints, key }).then(
    () => 'held',
    (error: Error) => error.message,
  );
}
