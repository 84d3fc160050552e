import { SqliteCheckpoints } from '../../db/journal-checkpoints.ts';
import { SqliteJournal } from '../../db/journal-store.ts';
import { openDatabase } from '../../db/open.ts';
import { storageOver } from '../../db/sqlite-storage.ts';
import type { IntegrityConfig, MirrorConfig } from '../../server/config/integrity.ts';
import { Checkpointer } from '../../server/integrity/checkpoints.ts';
import { JournalDamagedError } from '../../server/integrity/damage.ts';
import { openMirror } from '../../server/integrity/mirrors.ts';
import { checkJournalAtStart } from '../../server/integrity/start-check.ts';
import { loadOrCreateSigningKey, type SigningKey } from '../../server/receipts/keys.ts';
import { Views } from '../../server/views/views.ts';
import { fakeClock, makeTempDir } from './db-journals.ts';

// A journal file opened as start-up opens it: checked, held against its checkpoints and mirrors,
// and a checkpoint signed, with what it logged.

/** The receipt key every journal of these tests is checkpointed with. */
export const checkpointKey: SigningKey = loadOrCreateSigningKey(makeTempDir());
const key = checkpointKey;

export interface Logged {
  level: 'info' | 'warn';
  fields: Record<string, unknown>;
  message: string;
}

export function configOf(mirrors: MirrorConfig[], overrides: Partial<IntegrityConfig> = {}): IntegrityConfig {
  return { checkpointEveryEntries: 5, checkpointEveryMs: 60_000, mirrors, checkpointPublic: false, checkpointTokenSha256: null, tailVerifyMs: 300_000, wholePassMs: null, ...overrides };
}

/** Open a journal file as start-up does: check it, hold it against the checkpoints, sign one. */
export async function startChecked(file: string, mirrors: MirrorConfig[] = [], overrides: Partial<IntegrityConfig> = {}, signingKey: SigningKey = key) {
  const database = openDatabase(file);
  const journal = new SqliteJournal({ db: database.db, ...fakeClock() });
  const views = new Views({ journal, inboxName: 'inbox', nowMs: () => 0, log: { fatal: () => {}, error: () => {} } });
  const logged: Logged[] = [];
  const log = {
    info: (f: object, message: string) => logged.push({ level: 'info', fields: { ...f }, message }),
    warn: (f: object, message: string) => logged.push({ level: 'warn', fields: { ...f }, message }),
  };
  const store = new SqliteCheckpoints(database.db);
  const checkpointer = new Checkpointer({ store, views, key: signingKey, mirrors: mirrors.map(openMirror), config: configOf(mirrors, overrides), wallMs: () => 1_700_000_000_000, log, databaseFile: file });
  const close = () => {
    checkpointer.stop();
    database.close();
  };
  try {
    const outcome = await checkJournalAtStart({ storage: storageOver(database), journal: views.journal, views, log });
    await checkpointer.checkAtStart(outcome);
    await checkpointer.sign(true);
  } catch (error) {
    close();
    throw error;
  }
  return { database, journal: views.journal, views, store, checkpointer, logged, close };
}

/** What start-up says of a journal file: the damage it refused, or null when it started. */
export async function startRefusal(file: string, mirrors: MirrorConfig[] = []): Promise<JournalDamagedError | null> {
  try {
    const started = await startChecked(file, mirrors);
    started.close();
    return null;
  } catch (error) {
    if (error instanceof JournalDamagedError) return error;
    throw error;
  }
}

