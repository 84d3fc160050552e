import { DatabaseEncodingError, SchemaBehindError } from './pg/migrate.ts';
import { MigrationRefusedError, openPgStorage } from './pg/storage.ts';
import { StoreUnreachableError } from './port/errors.ts';
import type { Storage } from './port/storage.ts';
import { SchemaAheadError } from './schema-version.ts';
import { openStorage } from './sqlite-storage.ts';

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
