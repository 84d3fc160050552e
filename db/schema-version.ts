import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { sql } from 'drizzle-orm';
import type { BetterSQLite3Database } from 'drizzle-orm/better-sqlite3';
import { INTERLOCK_VERSION } from '../server/journal/version.ts';
import type * as schemaTables from './schema.ts';
import { schemaVersions } from './schema.ts';

// The schema a database is at, and the one this Interlock knows. A schema is the number of
// migrations applied (drizzle's __drizzle_migrations holds one row per migration, with the time of
// its folder); `schema_versions` says which Interlock brought the database to each schema. A
// database some newer Interlock migrated must not be opened by an older one: its migrator would
// find nothing to do and its code would read and write tables it does not know.

/** Beside this module in the sources (db/migrations), and beside the compiled server (dist/server/migrations). */
export const MIGRATIONS_FOLDER = fileURLToPath(new URL('./migrations', import.meta.url));

/** One migration this Interlock knows: its name (the SQL file's, without `.sql`) and its folder time. */
export interface KnownMigration {
  tag: string;
  whenMs: number;
}

let known: readonly KnownMigration[] | null = null;

/** The migrations this Interlock ships, in order (drizzle-kit's journal of them). */
export function knownMigrations(): readonly KnownMigration[] {
  if (known === null) {
    const journal: unknown = JSON.parse(readFileSync(join(MIGRATIONS_FOLDER, 'meta/_journal.json'), 'utf8'));
    const entries = typeof journal === 'object' && journal !== null && 'entries' in journal && Array.isArray(journal.entries) ? journal.entries : [];
    known = entries.map((entry: unknown) => {
      if (typeof entry !== 'object' || entry === null || !('tag' in entry) || !('when' in entry)) throw new Error('the migrations journal holds an entry with no tag or time');
      if (typeof entry.tag !== 'string' || typeof entry.when !== 'number') throw new Error('the migrations journal holds an entry with no tag or time');
      return { tag: entry.tag, whenMs: entry.when };
    });
  }
  return known;
}

/** The schema this Interlock knows: how many migrations it ships. */
export function knownSchema(): number {
  return knownMigrations().length;
}

/** What a database's own tables say of its schema. */
export interface DatabaseSchema {
  /** Migrations applied: 0 for a new file. */
  schema: number;
  /** Applied migrations this Interlock does not ship (a newer Interlock's). */
  unknown: number;
  /** The Interlock that brought it to `schema`, when it recorded itself (from schema 13 on). */
  interlock: string | null;
}

const hasTable = (sqlite: Database.Database, name: string) =>
  sqlite.prepare<[string], { n: number }>("SELECT count(*) AS n FROM sqlite_master WHERE type = 'table' AND name = ?").get(name)!.n > 0;

/** The schema `sqlite` is at, read without changing anything. */
export function databaseSchema(sqlite: Database.Database): DatabaseSchema {
  if (!hasTable(sqlite, '__drizzle_migrations')) return { schema: 0, unknown: 0, interlock: null };
  const lastKnownMs = knownMigrations().at(-1)?.whenMs ?? 0;
  const counts = sqlite
    .prepare<[number], { schema: number; unknown: number }>('SELECT count(*) AS schema, coalesce(sum(CAST(created_at AS INTEGER) > ?), 0) AS unknown FROM __drizzle_migrations')
    .get(lastKnownMs)!;
  const interlock = hasTable(sqlite, 'schema_versions')
    ? (sqlite.prepare<[number], { interlock: string }>('SELECT interlock FROM schema_versions WHERE schema = ?').get(counts.schema)?.interlock ?? null)
    : null;
  return { schema: counts.schema, unknown: counts.unknown, interlock };
}

/** A database a newer Interlock migrated: this one must not run on it. */
export class SchemaAheadError extends Error {
  readonly code = 'schema_ahead';

  /** `known`: the schema this Interlock ships for the database's engine (SQLite's by default; db/pg has its own). */
  constructor(
    readonly found: DatabaseSchema,
    known: number = knownSchema(),
  ) {
    const by = found.interlock === null ? 'a newer Interlock' : `Interlock ${found.interlock}`;
    super(
      `this database is at schema ${found.schema} (${by}); this Interlock knows schema ${known} (${INTERLOCK_VERSION}). ` +
        'Run the newer Interlock, or restore a backup taken before the upgrade.',
    );
    this.name = 'SchemaAheadError';
  }
}

/** Throw SchemaAheadError when `sqlite` holds a migration this Interlock does not ship, or more of them than it ships. */
export function refuseNewerSchema(sqlite: Database.Database): DatabaseSchema {
  const found = databaseSchema(sqlite);
  if (found.unknown > 0 || found.schema > knownSchema()) throw new SchemaAheadError(found);
  return found;
}

/** Record this Interlock as the one that brought the database to its schema, unless one already did. */
export function recordSchemaVersion(db: BetterSQLite3Database<typeof schemaTables>, nowMs: number = Date.now()): void {
  const applied = db.get<{ n: number }>(sql`SELECT count(*) AS n FROM __drizzle_migrations`).n;
  db.insert(schemaVersions).values({ schema: applied, interlock: INTERLOCK_VERSION, migratedAtMs: nowMs }).onConflictDoNothing().run();
}

/** What the file holds now, read without migrating it: null when there is no file yet. */
export function schemaOnDisk(file: string): DatabaseSchema | null {
  if (!existsSync(file)) return null;
  const sqlite = new Database(file, { fileMustExist: true });
  try {
    sqlite.pragma('busy_timeout = 5000');
    return databaseSchema(sqlite);
  } finally {
    sqlite.close();
  }
}
