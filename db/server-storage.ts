import { DatabaseEncodingError, knownPgMigrations, SchemaBehindError } from './pg/migrate.ts';
import { MigrationRefusedError, migratePgStorage, openPgStorage, pgLocation, readPgSchema } from './pg/storage.ts';
import { StoreUnreachableError } from './port/errors.ts';
import type { Storage } from './port/storage.ts';
import { type DatabaseSchema, knownMigrations, SchemaAheadError, schemaOnDisk } from './schema-version.ts';
import { migrateStorage, openStorage } from './sqlite-storage.ts';

// Where the server keeps everything: a PostgreSQL database when DATABASE_URL names one, else the
// SQLite file of DB_PATH. The server opens its storage here and nowhere else, so no module outside
// db/ imports a driver.

/** The storage a server is given: a SQLite file, or a PostgreSQL database with its owner's URL for the migrations. */
export type StoragePlace = { kind: 'sqlite'; file: string } | { kind: 'postgresql'; url: string; migrateUrl: string };

/** Open the storage at `place`, migrated to this Interlock's schema (a newer one is refused). */
export function openServerStorage(place: StoragePlace): Promise<Storage> {
  return place.kind === 'postgresql' ? openPgStorage({ url: place.url, migrateUrl: place.migrateUrl }) : openStorage({ file: place.file });
}

/**
 * True for a refusal of the storage at start that is the operator's to fix, told in one line: a
 * database that cannot be reached or logged into, one the role given may not migrate, one at a
 * newer schema or not migrated, or one not in UTF8.
 */
export function isStorageStartRefusal(error: unknown): error is Error {
  return error instanceof StoreUnreachableError || error instanceof MigrationRefusedError || error instanceof SchemaAheadError || error instanceof SchemaBehindError || error instanceof DatabaseEncodingError;
}

/** Where the storage is, as an operator names it: the SQLite file, or the database's URL without its password. */
export function placeName(place: StoragePlace): string {
  return place.kind === 'postgresql' ? pgLocation(place.url) : place.file;
}

/** The schema the storage at `place` is at now, nothing changed; null for a SQLite file not made yet. */
export async function storageSchema(place: StoragePlace): Promise<DatabaseSchema | null> {
  return place.kind === 'postgresql' ? readPgSchema(place.migrateUrl) : schemaOnDisk(place.file);
}

/** The migrations this Interlock ships for the storage at `place`, by name, in order. */
export function shippedMigrations(place: StoragePlace): string[] {
  if (place.kind === 'postgresql') return knownPgMigrations().map((m) => `${String(m.version).padStart(4, '0')}_${m.name}`);
  return knownMigrations().map((m) => m.tag);
}

/** Bring the storage at `place` to this Interlock's schema (PostgreSQL: as its owner, granting the application's role): the schema it is at then. */
export function migrateServerStorage(place: StoragePlace): Promise<DatabaseSchema> {
  return place.kind === 'postgresql' ? migratePgStorage(place) : migrateStorage(place.file);
}
