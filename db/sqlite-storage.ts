import Database from 'better-sqlite3';
import { drizzle } from 'drizzle-orm/better-sqlite3';
import { SqliteBudgetSlots } from './budget-slot-store.ts';
import { SqliteDerivedTables } from './derived-store.ts';
import { SqliteGrants } from './grants.ts';
import { SqliteLeases } from './leases.ts';
import { MemoryLeases } from './memory/leases.ts';
import { MemoryLoginThrottles } from './memory/login-throttles.ts';
import { MemorySignals } from './memory/signals.ts';
import { SqliteCheckpoints } from './journal-checkpoints.ts';
import { guardProblems } from './journal-guards.ts';
import { needsSealing, sealUnsealedJournal } from './journal-seals.ts';
import { connectionLock, onConnection } from './connection.ts';
import { SqliteJournal } from './journal-store.ts';
import { type DatabaseSchema, refuseNewerSchema } from './schema-version.ts';
import { type OpenDatabase, openDatabase } from './open.ts';
import type { Storage, StoredIntegrity } from './port/storage.ts';
import * as schema from './schema.ts';
import { SqliteSessions } from './session-store.ts';

// The storage on SQLite: one file (or one database in memory) holds the journal and everything
// beside it. This is the one place the server opens it; the tools that only read a journal file
// open it read-only here too (`openReadOnlyStorage`, sqlite-journal-file.ts).

/** Open (creating it, migrated, when missing) the storage at `file`; `:memory:` for one no other process sees. */
export async function openStorage(options: { file: string }): Promise<Storage> {
  return storageOver(openDatabase(options.file));
}

/**
 * A journal file opened read-only, as the offline check reads it: nothing is migrated, created or
 * written (sealing and every write fail), and no other process's budget is shared.
 */
export async function openReadOnlyStorage(file: string): Promise<Storage> {
  const sqlite = new Database(file, { readonly: true, fileMustExist: true });
  return storageOver({ file, db: drizzle({ client: sqlite, schema }), sqlite, close: () => sqlite.close() }, { shareBudget: false });
}

/** Bring the journal file at `file` to the schema this Interlock knows (creating it when missing): the schema it is at then. */
export async function migrateStorage(file: string): Promise<DatabaseSchema> {
  const opened = openDatabase(file);
  try {
    return refuseNewerSchema(opened.sqlite);
  } finally {
    opened.close();
  }
}

/**
 * What SQLite said of a file it cannot read as a database at all (SQLITE_NOTADB) or whose pages
 * are broken (SQLITE_CORRUPT and its kinds): its code, and its message on one line. Null for any
 * other error.
 */
export function unreadableFileError(error: unknown): { code: string; said: string } | null {
  if (!(error instanceof Error) || !('code' in error) || typeof error.code !== 'string') return null;
  const code = error.code;
  if (!(code === 'SQLITE_NOTADB' || code.startsWith('SQLITE_CORRUPT'))) return null;
  return { code, said: error.message.replace(/\s+/g, ' ') };
}

/** True for an error SQLite raised reading a file: one that is no Interlock journal, or one it cannot read. */
export function isUnreadableStore(error: unknown): error is Error {
  return error instanceof Database.SqliteError;
}

/** The storage over a database already open (a test that also reaches the file underneath); closing it closes the database. */
export function storageOver(database: OpenDatabase, options: { shareBudget?: boolean } = {}): Storage {
  const checkpoints = new SqliteCheckpoints(database.db);
  const memory = database.sqlite.memory;
  // On the connection under its lock, as every other use of it: sealing awaits its backup copy.
  const client = database.sqlite;
  const integrity: StoredIntegrity = {
    guardProblems: () => onConnection(client, async () => guardProblems(client)),
    rowOutsideTheOrder: () =>
      onConnection(client, async () => {
        const row = database.sqlite.prepare<[], { seq: number; effect_id: string }>('SELECT seq, effect_id FROM entries WHERE seq < 1 ORDER BY seq LIMIT 1').get();
        return row === undefined ? null : { seq: row.seq, effectId: row.effect_id };
      }),
    needsSealing: () => onConnection(client, async () => needsSealing(client)),
    sealUnsealed: (backupFile) => onConnection(client, () => sealUnsealedJournal(client, backupFile)),
    backupTo: (backupFile) => onConnection(client, async () => void (await client.backup(backupFile))),
  };
  const budgetSlots = memory || options.shareBudget === false ? null : new SqliteBudgetSlots(database.sqlite.name);
  // A database in memory, or one opened read-only, is no other process's: its leases stay in memory.
  const leases = memory || options.shareBudget === false ? new MemoryLeases() : new SqliteLeases(database.sqlite.name);
  // Other processes on the file find new entries by polling it: signals stay inside this one.
  const signals = new MemorySignals();
  return {
    location: database.file,
    engine: 'sqlite',
    journal: (journalOptions) => new SqliteJournal({ db: database.db, ...journalOptions }),
    sessions: new SqliteSessions(database.db),
    grants: (nowMs) => new SqliteGrants({ db: database.db, nowMs }),
    checkpoints,
    budgetSlots,
    leases,
    // In this process's memory: a SQLite file is one host, whose logins one server takes.
    loginThrottles: new MemoryLoginThrottles(),
    // A connection opened read-only (openReadOnlyStorage) reads them and refuses their writes.
    derived: new SqliteDerivedTables(database.db, { readOnly: database.sqlite.readonly }),
    signals,
    integrity,
    // Under the lock too: a read or a batch that holds it finishes first, rather than being cut off
    // between its statements.
    // Work queued behind it is refused with StoreClosedError. Closing twice closes once.
    close: () =>
      connectionLock(client).run(async () => {
        if (!client.open) return;
        budgetSlots?.close();
        await leases.close();
        await signals.close();
        database.close();
      }),
  };
}
