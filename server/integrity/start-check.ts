import { describeGuardProblems } from '../../db/journal-guards.ts';
import { SealRefusedError, StoreUnsupportedError } from '../../db/port/errors.ts';
import type { Storage } from '../../db/port/storage.ts';
import type { JournalStore } from '../journal/store.ts';
import type { Views } from '../views/views.ts';
import type { TablesFound } from '../views/writer.ts';
import { JournalDamagedError } from './damage.ts';

// Start-up's integrity check, before the server listens: the schema's guards, the global chain
// (sealing a journal an earlier Interlock wrote), the replay that verifies every entry, and the
// checkpoints. Any failure is one JournalDamagedError: main.ts prints its one line and exits 2,
// and nothing is served from the journal. When the replay rebuilds the derived tables the server
// listens from just before it (`beforeReplay`), its journal routes held until the check ends.

export interface StartCheckParts {
  /** Where the journal is kept: its location and the checks on its stored rows. */
  storage: Pick<Storage, 'location' | 'integrity'>;
  /** The journal as the views read it. */
  journal: JournalStore;
  views: Views;
  log: { info(fields: object, message: string): void };
  /** Seal a journal written before the global chain (default true); a read-only check reports it instead. */
  seal?: boolean;
  /**
   * Called once the stored rows passed and the journal is sealed, before the replay, with the
   * derived tables as found: the server listens first when they are to be rebuilt.
   */
  beforeReplay?: (found: TablesFound) => Promise<void>;
}

/** What the check found: the journal's size and head, as the replay recomputed them. */
export interface StartCheckOutcome {
  size: number;
  head: string | null;
  sealed: number;
}

/**
 * The stored rows' checks that come before any entry is read: the schema's guards, and no row
 * stored outside the journal's order. Each failure is a JournalDamagedError.
 */
export async function refuseDamagedRows(storage: Pick<Storage, 'location' | 'integrity'>): Promise<void> {
  const databaseFile = storage.location;
  const problems = await storage.integrity.guardProblems();
  if (problems.length > 0) throw new JournalDamagedError('journal_guard_missing', describeGuardProblems(problems), { databaseFile });
  // A row the replay would not read: it reads every entry numbered from 1, so a row stored below
  // that (by hand: hash-valid, its chain's own, and read by anyone who asks for its effect) would
  // go unchecked.
  const hidden = await storage.integrity.rowOutsideTheOrder();
  if (hidden !== null) {
    throw new JournalDamagedError('journal_corrupt', `journal entry seq ${hidden.seq} is stored outside the journal's order (its entries are numbered from 1), where the replay never reads it`, { site: hidden, databaseFile });
  }
}

export async function checkJournalAtStart(parts: StartCheckParts): Promise<StartCheckOutcome> {
  const { storage, views } = parts;
  const databaseFile = storage.location;
  // Before sealing: a journal with a row the replay never reads is refused, not sealed.
  await refuseDamagedRows(storage);
  const sealed = parts.seal === false ? await refuseUnsealed(storage) : await sealIfUnsealed(storage, parts.log);
  const found = await views.tablesFound();
  // Tables missing from a journal an earlier Interlock wrote: the first start that writes them
  // keeps a copy of the database as it was (unless sealing just took one). Tables of another
  // version, or of another journal, are a cache: they are rebuilt with no copy.
  if (found.reason === 'missing' && sealed === 0 && parts.seal !== false) await backUpBeforeTables(storage, parts.log);
  await parts.beforeReplay?.(found);
  await replay(views, databaseFile);
  // The newest seal as stored, and its global hash (a seal is never changed once written): read
  // without counting the entries, which would read every one of them.
  const storedSeq = await parts.journal.newestSeq();
  const storedHash = storedSeq === 0 ? null : await parts.journal.sealAt(storedSeq);
  // Another process on the same journal may have appended since the replay read its last entry:
  // the replay catches up with everything durable before the head was read, then compares.
  await replay(views, databaseFile);
  const replayed = views.head;
  const replayedSeq = replayed?.seq ?? 0;
  if (replayedSeq < storedSeq || (replayedSeq === storedSeq && storedHash !== (replayed?.globalHash ?? null))) {
    // The replay read every entry and recomputed the chain, checking each entry's seal, to its
    // last one; a seal beyond it belongs to an entry that is gone.
    const site = storedSeq === 0 ? null : { seq: storedSeq, effectId: 'unknown' };
    throw new JournalDamagedError('journal_corrupt', `the global chain goes on to seq ${storedSeq} but the entries end at seq ${replayedSeq}: entries were removed from the end`, { site, databaseFile });
  }
  return { size: replayed?.size ?? 0, head: replayed?.globalHash ?? null, sealed };
}

/** The views caught up with the journal, every entry and seal verified on the way. */
async function replay(views: Views, databaseFile: string): Promise<void> {
  const corrupt = await views.replayAtStart();
  if (corrupt !== null) throw JournalDamagedError.fromCorrupt(corrupt, databaseFile);
}

/** A read-only check cannot seal: a journal with entries and no global chain is reported. */
export async function refuseUnsealed(storage: StartCheckParts['storage']): Promise<number> {
  if (!(await storage.integrity.needsSealing())) return 0;
  const what = 'the journal has entries but no global chain: it was written before the global chain and not started since, or its seals were removed';
  throw new JournalDamagedError('journal_corrupt', what, { databaseFile: storage.location });
}

/** Seal a journal an earlier Interlock wrote (the storage's `sealUnsealed`); how many entries were sealed. */
async function sealIfUnsealed(storage: StartCheckParts['storage'], log: StartCheckParts['log']): Promise<number> {
  // Asked first: a storage that seals every entry as it is written (PostgreSQL) never seals afterwards.
  if (!(await storage.integrity.needsSealing())) return 0;
  try {
    const outcome = await storage.integrity.sealUnsealed(backupFileFor(storage.location, 'before-seal'));
    if (outcome.sealed > 0) {
      log.info(
        { event: 'journal_sealed', sealed: outcome.sealed, backup: outcome.backupFile },
        `sealed the ${outcome.sealed} entries of a journal written before the global chain; the database before it is at ${outcome.backupFile}`,
      );
    }
    return outcome.sealed;
  } catch (error) {
    // Entries without their seals where every entry is sealed as written: the seals were removed.
    if (error instanceof StoreUnsupportedError) await refuseUnsealed(storage);
    if (!(error instanceof SealRefusedError)) throw error;
    const site = error.corrupt === null ? null : { seq: error.corrupt.seq, effectId: error.corrupt.effectId };
    throw new JournalDamagedError('journal_corrupt', error.message, { site, databaseFile: storage.location });
  }
}

/** A copy of the database before the derived tables are first written in it, beside it. */
async function backUpBeforeTables(storage: StartCheckParts['storage'], log: StartCheckParts['log']): Promise<void> {
  const backupFile = backupFileFor(storage.location, 'before-views');
  try {
    await storage.integrity.backupTo(backupFile);
  } catch (error) {
    // A storage that copies nothing to a file (PostgreSQL, backed up with its own tools): the tables are a cache, rebuilt all the same.
    if (!(error instanceof StoreUnsupportedError)) throw error;
    log.info({ event: 'views_backup', backup: null }, `the journal has no derived tables yet: they are built with no copy taken before (${error.message})`);
    return;
  }
  log.info(
    { event: 'views_backup', backup: backupFile },
    `the journal has no derived tables yet (written by an earlier Interlock): the database before they are built is at ${backupFile}`,
  );
}

/** Where a backup taken before start-up changes the database goes: beside it, named for what follows and the moment. */
function backupFileFor(databaseFile: string, before: 'before-seal' | 'before-views'): string {
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  return databaseFile === ':memory:' || databaseFile === '' ? `interlock-${before}-${stamp}.sqlite` : `${databaseFile}.${before}-${stamp}.sqlite`;
}
