import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { type BetterSQLite3Database, drizzle } from 'drizzle-orm/better-sqlite3';
import { migrate } from 'drizzle-orm/better-sqlite3/migrator';
import * as schema from './schema.ts';
import { MIGRATIONS_FOLDER, recordSchemaVersion, refuseNewerSchema } from './schema-version.ts';

/** The drizzle handle over the journal database. */
export type JournalDb = BetterSQLite3Database<typeof schema> & { $client: Database.Database };

/** An open journal database: the drizzle handle, the raw connection, and how to close both. */
export interface OpenDatabase {
  /** The file it was opened at (`:memory:` for none). */
  file: string;
  db: JournalDb;
  sqlite: Database.Database;
  close(): void;
}

// Processes that open a fresh file together race to migrate it. drizzle's migrator reads the
// applied migrations before it takes the write lock, so a loser fails on "table already exists";
// reading again after the winner committed finds nothing left to do. Each failed attempt has
// already waited out the winner's lock (busy_timeout), so the retries need no sleep.
const migrateAttemptsMax = 5;

/**
 * Open (creating if missing, with its folder) the journal database at `file` and bring its schema
 * up to date; a database a newer Interlock migrated is refused (SchemaAheadError) before anything
 * is written to it. `synchronous = FULL` because a committed entry records money and must survive a
 * power loss; WAL so readers never wait for the writer.
 */
export function openDatabase(file: string): OpenDatabase {
  if (file !== ':memory:' && file !== '') {
    fs.mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
    keepToOwner(file);
  }
  const sqlite = new Database(file);
  try {
    // busy_timeout first: switching to WAL needs a lock another process may briefly hold.
    sqlite.pragma('busy_timeout = 5000');
    switchToWal(sqlite);
    sqlite.pragma('synchronous = FULL');
    sqlite.pragma('foreign_keys = ON');
    refuseNewerSchema(sqlite);
    const db = drizzle({ client: sqlite, schema });
    migrateDatabase(db);
    return { file, db, sqlite, close: () => sqlite.close() };
  } catch (error) {
    sqlite.close();
    throw error;
  }
}

/** The system error code a file call failed with (ENOENT, EEXIST, ...), if it is one. */
function errnoOf(error: unknown): string | undefined {
  return error instanceof Error && 'code' in error && typeof error.code === 'string' ? error.code : undefined;
}

/** Only the owner may read or write a journal file: SQLite creates its write-ahead log and index with the database's own mode. */
export const JOURNAL_FILE_MODE = 0o600;

/**
 * Make the journal (and its write-ahead log and index, where they are) readable by its owner only:
 * a new one is created so before SQLite opens it (SQLite would give it the umask's 0644), and one
 * left readable by others is narrowed.
 */
function keepToOwner(file: string): void {
  try {
    fs.writeFileSync(file, '', { flag: 'wx', mode: JOURNAL_FILE_MODE });
  } catch (error) {
    if (errnoOf(error) !== 'EEXIST') throw error;
  }
  for (const suffix of ['', '-wal', '-shm']) {
    try {
      const { mode } = fs.statSync(`${file}${suffix}`);
      if ((mode & 0o077) !== 0) fs.chmodSync(`${file}${suffix}`, mode & 0o700);
    } catch (error) {
      // Gone meanwhile, or another user's file (a tool reading it): left as it is.
      const code = errnoOf(error);
      if (code !== 'ENOENT' && code !== 'EPERM') throw error;
    }
  }
}

// SQLite answers SQLITE_BUSY to a switch into WAL at once, without its busy handler, when another
// connection to a fresh file holds a lock the switch would have to wait behind (seen with four
// processes opening one new file together). The switch is tried again for as long as busy_timeout.
const walSwitchWaitMs = 5_000;
const walSwitchPauseMs = 10;

function switchToWal(sqlite: Database.Database): void {
  const giveUpAtMs = Date.now() + walSwitchWaitMs;
  for (;;) {
    try {
      sqlite.pragma('journal_mode = WAL');
      return;
    } catch (error) {
      if (!(error instanceof Database.SqliteError) || error.code !== 'SQLITE_BUSY' || Date.now() >= giveUpAtMs) throw error;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, walSwitchPauseMs);
    }
  }
}

/**
 * Apply the migrations in `db/migrations` that the database lacks and record this Interlock as the
 * one that brought it to its schema; safe when processes race to do it.
 */
export function migrateDatabase(db: JournalDb): void {
  for (let attempt = 1; ; attempt++) {
    try {
      migrate(db, { migrationsFolder: MIGRATIONS_FOLDER });
      recordSchemaVersion(db);
      return;
    } catch (error) {
      if (attempt >= migrateAttemptsMax) throw error;
    }
  }
}
