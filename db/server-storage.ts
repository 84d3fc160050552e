import { StoreUnreachableError } from './port/errors.ts';
import type { Storage } from './port/storage.ts';
import type { PgToolStorage } from './pg/storage.ts';
import { type DatabaseSchema, knownMigrations, SchemaAheadError, schemaOnDisk } from './schema-version.ts';
import { migrateStorage, openStorage } from './sqlite-storage.ts';

// Where the server keeps everything: a PostgreSQL database when DATABASE_URL names one, else the
// SQLite file of DB_PATH. The server opens its storage here and nowhere else, so no module outside
// db/ imports a driver. PostgreSQL's modules (and its driver) are loaded only when it is asked for:
// a server on SQLite starts as it did.

/**
 * The storage a server is given: a SQLite file, or a PostgreSQL database with its owner's URL for
 * the migrations and the URL its signals are listened for on (`url` unless given).
 */
export type StoragePlace = { kind: 'sqlite'; file: string } | { kind: 'postgresql'; url: string; migrateUrl: string; listenUrl?: string; poolMax?: number };

/** Open the storage at `place`, migrated to this Interlock's schema (a newer one is refused). */
export async function openServerStorage(place: StoragePlace): Promise<Storage> {
  if (place.kind === 'sqlite') return openStorage({ file: place.file });
  const { openPgStorage } = await import('./pg/storage.ts');
  return openPgStorage({ url: place.url, migrateUrl: place.migrateUrl, listenUrl: place.listenUrl ?? place.url, ...(place.poolMax === undefined ? {} : { max: place.poolMax }) });
}

/**
 * The codes of the refusals at start that PostgreSQL's storage raises (db/pg/storage.ts,
 * db/pg/migrate.ts): a role that may not migrate, a database not migrated, or not in UTF8.
 */
const PG_START_REFUSALS: ReadonlySet<string> = new Set(['migration_refused', 'schema_behind', 'database_encoding']);

/**
 * True for a refusal of the storage at start that is the operator's to fix, told in one line: a
 * database that cannot be reached or logged into, one the role given may not migrate, one at a
 * newer schema or not migrated, or one not in UTF8.
 */
export function isStorageStartRefusal(error: unknown): error is Error {
  if (error instanceof StoreUnreachableError || error instanceof SchemaAheadError) return true;
  return error instanceof Error && 'code' in error && typeof error.code === 'string' && PG_START_REFUSALS.has(error.code);
}

/** Where the storage is, as an operator names it: the SQLite file, or the database's URL without its password. */
export async function placeName(place: StoragePlace): Promise<string> {
  if (place.kind === 'sqlite') return place.file;
  return (await import('./pg/storage.ts')).pgLocation(place.url);
}

/** The schema the storage at `place` is at now, nothing changed; null for a SQLite file not made yet. */
export async function storageSchema(place: StoragePlace): Promise<DatabaseSchema | null> {
  if (place.kind === 'sqlite') return schemaOnDisk(place.file);
  return (await import('./pg/storage.ts')).readPgSchema(place.migrateUrl);
}

/** The migrations this Interlock ships for the storage at `place`, by name, in order. */
export async function shippedMigrations(place: StoragePlace): Promise<string[]> {
  if (place.kind === 'sqlite') return knownMigrations().map((m) => m.tag);
  const { knownPgMigrations } = await import('./pg/migrate.ts');
  return knownPgMigrations().map((m) => `${String(m.version).padStart(4, '0')}_${m.name}`);
}

/** Bring the storage at `place` to this Interlock's schema (PostgreSQL: as its owner, granting the application's role): the schema it is at then. */
export async function migrateServerStorage(place: StoragePlace): Promise<DatabaseSchema> {
  if (place.kind === 'sqlite') return migrateStorage(place.file);
  return (await import('./pg/storage.ts')).migratePgStorage(place);
}

/**
 * The PostgreSQL storage at `url`, opened as it is for an operator's tool (`tool` names its
 * connections): never migrated, refused unless at exactly this Interlock's schema.
 */
export async function openPgToolStorage(options: { url: string; tool: string }): Promise<PgToolStorage> {
  return (await import('./pg/storage.ts')).openPgToolStorage(options);
}
