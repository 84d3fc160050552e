import { openPgToolStorage } from '../../db/server-storage.ts';
import type { InterlockEnv } from '../config/env.ts';
import { type JournalReport, verifyJournalFile, verifyStorage } from '../integrity/verify-journal.ts';
import type { SigningKey } from '../receipts/keys.ts';
import { chainsInPeriodOf } from './port-chains.ts';
import type { ChainSource } from './read-journal.ts';

// The journal an export reads, wherever the server keeps it: the SQLite file of DB_PATH, read on a
// connection of its own in one snapshot, or the PostgreSQL database of DATABASE_URL, read through
// the storage port. Either is first checked as start-up checks it.

/** The journal an export reads, and why it fails start-up's check (null when it passes): then no receipt is exported as verified. */
export interface ExportJournal {
  /** The file's path, or the port's chains of a database. */
  source: string | ChainSource;
  journalProblem: string | null;
  close(): Promise<void>;
}

/** Why a journal fails the check, as each row of the export says it; null for none. */
function problemOf(report: JournalReport): string | null {
  if (report.valid || report.problem === null) return null;
  const { code, seq, message } = report.problem;
  return `journal_damaged: ${code}${seq === null ? '' : ` at seq ${seq}`}: ${message}`;
}

/**
 * Open the journal `env` names for an export, checked against `key` as start-up checks it. A
 * PostgreSQL database is opened as it is, never migrated: one that cannot be reached, or is not at
 * this Interlock's schema, is refused (isStorageStartRefusal).
 */
export async function openExportJournal(env: Pick<InterlockEnv, 'dbPath' | 'databaseUrl'>, key: SigningKey): Promise<ExportJournal> {
  const against = { publicKeyPem: key.publicKeyPem, keyId: key.keyId };
  if (env.databaseUrl === null) {
    return { source: env.dbPath, journalProblem: problemOf(await verifyJournalFile(env.dbPath, against)), close: async () => {} };
  }
  const { storage } = await openPgToolStorage({ url: env.databaseUrl, tool: 'export' });
  try {
    const journalProblem = problemOf(await verifyStorage(storage, storage.location, against));
    const journal = storage.journal({ wallClockMs: Date.now });
    const source: ChainSource = { location: storage.location, chainsInPeriod: (period, entriesMax) => chainsInPeriodOf(journal, period, entriesMax), close: () => storage.close() };
    return { source, journalProblem, close: () => storage.close() };
  } catch (error) {
    await storage.close();
    throw error;
  }
}
