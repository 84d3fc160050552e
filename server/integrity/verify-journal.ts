import { existsSync } from 'node:fs';
import type { Storage } from '../../db/port/storage.ts';
import { isUnreadableStore, openReadOnlyStorage } from '../../db/sqlite-storage.ts';
import { JournalCorruptError, type JournalHead, type JournalStore } from '../journal/store.ts';
import { readCheckpoint, unverifiedCheckpoint } from './checkpoint.ts';
import { storedJournalId, storedRowProblem } from './checkpoints.ts';
import { JournalDamagedError } from './damage.ts';
import { checkpointDamage, readEpochs } from './epoch.ts';
import { refuseDamagedRows, refuseUnsealed } from './start-check.ts';
import { WholeJournalPass, WholePassCounts } from './whole-pass.ts';

// `npm run verify -- --journal <file>`: start-up's checks, offline and read-only, on a copy of
// the database (or the database itself, which it never writes): the guards, every entry and its
// seal, the global chain to the stored head, every chain's links, the journal's id, epochs and
// newest stored checkpoint (their signatures with `--key`), and with `--checkpoint` a signed
// checkpoint it must agree with. Entries are read as the background pass reads them (a page, then
// one chain, at a time), never folded into views, so its memory does not grow with the journal:
// folding 10M entries into views held in memory ran it out of heap.

/** A slice of the offline walk: long, since nothing else waits on this process. */
const OFFLINE_SLICE_MS = 1_000;

/** What the journal check found. */
export interface JournalReport {
  valid: boolean;
  file: string;
  /** Entries and the global head, when every entry verified. */
  size: number | null;
  head: string | null;
  /** The checkpoint it was held against, when one was given and it verified. */
  checkpoint: { origin: string; size: number; head: string } | null;
  problem: { code: string; message: string; seq: number | null; effect_id: string | null } | null;
}

/**
 * Check a journal database file as start-up does, read-only: the guards, every entry, both chains,
 * its id, its epochs and its newest stored checkpoint; with the public key, the signatures of
 * those (without, what they claim is still held against the journal); and with a checkpoint note
 * too, that the journal agrees with it.
 */
export async function verifyJournalFile(file: string, against?: { note?: string; publicKeyPem: string; keyId: string }): Promise<JournalReport> {
  if (!existsSync(file)) return { valid: false, file, size: null, head: null, checkpoint: null, problem: { code: 'journal_missing', message: `${file} does not exist`, seq: null, effect_id: null } };
  const storage = await openReadOnlyStorage(file);
  try {
    return await verifyStorage(storage, file, against);
  } finally {
    await storage.close();
  }
}

/**
 * The same check on an open storage (a PostgreSQL database an operator's tool reads), nothing
 * written: `location` is what the report and its messages name.
 */
export async function verifyStorage(storage: Storage, location: string, against?: { note?: string; publicKeyPem: string; keyId: string }): Promise<JournalReport> {
  const file = location;
  const report: JournalReport = { valid: false, file, size: null, head: null, checkpoint: null, problem: null };
  const problem = (code: string, message: string, site: { seq: number; effectId: string } | null = null): JournalReport => ({
    ...report,
    problem: { code, message, seq: site?.seq ?? null, effect_id: site?.effectId ?? null },
  });
  try {
    await refuseDamagedRows(storage);
    await refuseUnsealed(storage);
    const journal = storage.journal({ wallClockMs: () => Date.now() });
    const head = await journal.head();
    await walkWhole(journal, head, file);
    report.size = head?.size ?? 0;
    report.head = head?.globalHash ?? null;
    const key = against === undefined ? null : { publicKeyPem: against.publicKeyPem, keyId: against.keyId };
    const store = storage.checkpoints;
    const stored = await store.latest();
    const journalId = (await storedJournalId(store, stored !== null, file)) ?? '';
    const epochs = await readEpochs(journal, key, journalId, file);
    const size = report.size;
    const held = { journalId, size, epochs, globalHashAtSize: (n: number) => store.globalHashAtSize(n, head !== null && head.seq === head.size), seqAtSize: (n: number) => store.seqAtSize(n) };
    if (stored !== null) {
      // As start-up holds it: a row that is not its note, or a journal short of it, is damage.
      const rowProblem = storedRowProblem(stored, key);
      if (rowProblem !== null) throw new JournalDamagedError('checkpoint_invalid', `the newest checkpoint in the store ${rowProblem}`, { databaseFile: file });
      const claimed = unverifiedCheckpoint(stored.note);
      const damage = claimed === null ? null : await checkpointDamage(claimed, held, 'the store', file);
      if (damage !== null) throw damage;
    }
    if (against?.note !== undefined) {
      const read = readCheckpoint(against.note, { publicKeyPem: against.publicKeyPem, keyId: against.keyId });
      if (!read.ok) return problem('checkpoint_invalid', `the checkpoint does not verify: ${read.code}: ${read.message}`);
      report.checkpoint = read.checkpoint;
      const damage = await checkpointDamage(read.checkpoint, held, 'the checkpoint given', file);
      if (damage !== null) throw damage;
    }
    return { ...report, valid: true };
  } catch (error) {
    if (error instanceof JournalDamagedError) return problem(error.code, error.message, error.site);
    if (isUnreadableStore(error)) return problem('journal_unreadable', `${file} cannot be read as an Interlock journal: ${error.message}`);
    throw error;
  }
}

/**
 * Every entry read with its hash and seal, the global chain recomputed from the first entry to
 * the stored head, and every chain's links, in bounded memory; damage is a JournalDamagedError.
 */
async function walkWhole(journal: JournalStore, head: JournalHead | null, file: string): Promise<void> {
  let found: unknown = null;
  const pass = new WholeJournalPass({
    journal,
    report: (error) => {
      found = error;
      return error instanceof JournalCorruptError;
    },
    recomputedHead: () => head,
    failed: () => false,
    checkpointProblem: async () => null,
    counts: new WholePassCounts(),
    periodMs: 0,
    log: { warn: () => {} },
    sliceMs: OFFLINE_SLICE_MS,
    share: 1,
    sleep: async () => {},
    foundBy: 'the verifier',
    headIs: 'the stored head',
  });
  if (await pass.run()) return;
  if (found instanceof JournalCorruptError) throw JournalDamagedError.fromCorrupt(found, file);
  throw found;
}
