import { existsSync } from 'node:fs';
import { isUnreadableStore, openReadOnlyStorage } from '../../db/sqlite-storage.ts';
import { Views } from '../views/views.ts';
import { readCheckpoint, unverifiedCheckpoint } from './checkpoint.ts';
import { storedJournalId, storedRowProblem } from './checkpoints.ts';
import { JournalDamagedError } from './damage.ts';
import { checkpointDamage, readEpochs } from './epoch.ts';
import { checkJournalAtStart } from './start-check.ts';

// `npm run verify -- --journal <file>`: the start-up check, offline and read-only, on a copy of
// the database (or the database itself, which it never writes): the guards, every entry, the
// global chain, the journal's id, epochs and newest stored checkpoint (their signatures with
// `--key`), and with `--checkpoint` a signed checkpoint it must agree with.

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
  const report: JournalReport = { valid: false, file, size: null, head: null, checkpoint: null, problem: null };
  const problem = (code: string, message: string, site: { seq: number; effectId: string } | null = null): JournalReport => ({
    ...report,
    problem: { code, message, seq: site?.seq ?? null, effect_id: site?.effectId ?? null },
  });
  if (!existsSync(file)) return problem('journal_missing', `${file} does not exist`);
  const storage = await openReadOnlyStorage(file);
  try {
    const journal = storage.journal({ wallClockMs: () => Date.now() });
    const views = new Views({ journal, inboxName: 'inbox', nowMs: () => Date.now(), log: { fatal: () => {}, error: () => {} } });
    const outcome = await checkJournalAtStart({ storage, journal: views.journal, views, log: { info: () => {} }, seal: false });
    report.size = outcome.size;
    report.head = outcome.head;
    const key = against === undefined ? null : { publicKeyPem: against.publicKeyPem, keyId: against.keyId };
    const store = storage.checkpoints;
    const stored = await store.latest();
    const journalId = (await storedJournalId(store, stored !== null, file)) ?? '';
    const epochs = await readEpochs(views.journal, key, journalId, file);
    const held = { journalId, size: outcome.size, epochs, globalHashAtSize: (n: number) => store.globalHashAtSize(n, views.head !== null && views.head.seq === views.head.size), seqAtSize: (n: number) => store.seqAtSize(n) };
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
  } finally {
    await storage.close();
  }
}
