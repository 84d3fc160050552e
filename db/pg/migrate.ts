import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { INTERLOCK_VERSION } from '../../server/journal/version.ts';
import { type DatabaseSchema, SchemaAheadError } from '../schema-version.ts';

// The schema of a PostgreSQL database: the SQL files in db/pg/migrations, applied in order by the
// owner role, each recorded in `interlock_migrations`. A database some newer Interlock migrated is
// refused, as on SQLite (db/schema-version.ts), before anything is written to it.

/**
 * db/pg/migrations, found from the project's root two folders up: from this module in db/pg, and
 * from the compiled server in dist/server alike (whose `migrations` beside it are SQLite's).
 */
export const PG_MIGRATIONS_FOLDER = fileURLToPath(new URL('../../db/pg/migrations', import.meta.url));

/** One migration this Interlock ships: its version (the file's number) and name. */
export interface PgMigration {
  version: number;
  name: string;
  sql: string;
}

let known: readonly PgMigration[] | null = null;

/** The migrations this Interlock ships, in order: `NNNN_name.sql`, numbered from 1 without a gap. */
export function knownPgMigrations(): readonly PgMigration[] {
  if (known === null) {
    const files = readdirSync(PG_MIGRATIONS_FOLDER).filter((file) => file.endsWith('.sql')).sort();
    known = files.map((file, i) => {
      const match = /^(\d{4})_([a-z0-9_]+)\.sql$/.exec(file);
      if (match === null || Number(match[1]) !== i + 1) throw new Error(`db/pg/migrations/${file} is not migration ${i + 1} (NNNN_name.sql, numbered from 1)`);
      return { version: i + 1, name: match[2]!, sql: readFileSync(`${PG_MIGRATIONS_FOLDER}/${file}`, 'utf8') };
    });
  }
  return known;
}

/**
 * What the application's role may do, table by table: write the journal only by appending, move
 * the head, keep the claims, start and end sessions, grant or revoke leases (never delete one),
 * take and give back the Stripe budget's slots and the background-work leases, keep the
 * derived tables, and count failed logins. It owns nothing, so it can neither drop a guard nor alter a table.
 */
export const APP_PRIVILEGES: Readonly<Record<string, string>> = {
  entries: 'SELECT, INSERT',
  journal_seals: 'SELECT, INSERT',
  journal_head: 'SELECT, UPDATE',
  claims: 'SELECT, INSERT, UPDATE, DELETE',
  journal_checkpoints: 'SELECT, INSERT',
  journal_meta: 'SELECT, INSERT',
  // Slot rows are made once and then only taken and given back; wants come and go.
  stripe_budget_slots: 'SELECT, INSERT, UPDATE',
  stripe_budget_wants: 'SELECT, INSERT, UPDATE, DELETE',
  // The derived tables are a cache the application rebuilds: it moves the cursor, replaces and
  // removes rows and digests, records marks, and empties them all on a reset (by DELETE).
  derived_cursor: 'SELECT, INSERT, UPDATE',
  derived_rows: 'SELECT, INSERT, UPDATE, DELETE',
  derived_digests: 'SELECT, INSERT, UPDATE, DELETE',
  derived_marks: 'SELECT, INSERT, DELETE',
  schema_versions: 'SELECT',
  interlock_migrations: 'SELECT',
  sessions: 'SELECT, INSERT, UPDATE, DELETE',
  grants: 'SELECT, INSERT, UPDATE',
  // A lease row is made once, then taken, renewed and given back in place.
  work_leases: 'SELECT, INSERT, UPDATE',
  // Login counts are made, counted up, and removed once forgotten or past the bound.
  login_throttles: 'SELECT, INSERT, UPDATE, DELETE',
};

// Migrators of several processes (or servers) take turns: the first to hold this lock applies
// what is missing, the others then find nothing to do.
const MIGRATE_LOCK_SQL = "SELECT pg_advisory_xact_lock(hashtext('interlock.migrate'))";

const LEDGER_SQL = `CREATE TABLE IF NOT EXISTS interlock_migrations (
  version int4 PRIMARY KEY,
  name text NOT NULL,
  applied_at_ms int8 NOT NULL
)`;

/** What the database's own tables say of its schema, read with `client`. */
export async function pgDatabaseSchema(client: pg.ClientBase): Promise<DatabaseSchema> {
  const ledger = await client.query<{ present: boolean }>("SELECT to_regclass('interlock_migrations') IS NOT NULL AS present");
  if (!ledger.rows[0]?.present) return { schema: 0, unknown: 0, interlock: null };
  const applied = await client.query<{ version: number; name: string }>('SELECT version, name FROM interlock_migrations ORDER BY version');
  const ships = new Map(knownPgMigrations().map((m) => [m.version, m.name]));
  const unknown = applied.rows.filter((row) => ships.get(row.version) !== row.name).length;
  const schema = applied.rows.length;
  const table = await client.query<{ present: boolean }>("SELECT to_regclass('schema_versions') IS NOT NULL AS present");
  if (!table.rows[0]?.present) return { schema, unknown, interlock: null };
  const versions = await client.query<{ interlock: string }>('SELECT interlock FROM schema_versions WHERE schema = $1', [schema]);
  return { schema, unknown, interlock: versions.rows[0]?.interlock ?? null };
}

/** A database whose encoding is not UTF8: an entry with a character outside it would be refused only when written. */
export class DatabaseEncodingError extends Error {
  readonly code = 'database_encoding';

  constructor(readonly encoding: string) {
    super(`this database has encoding ${encoding}; Interlock's journal needs UTF8 (CREATE DATABASE ... ENCODING 'UTF8' TEMPLATE template0)`);
    this.name = 'DatabaseEncodingError';
  }
}

/** Throw DatabaseEncodingError unless the database, read with `client`, is UTF8. */
export async function refuseNonUtf8Database(client: pg.ClientBase): Promise<void> {
  const encoding = (await client.query<{ encoding: string }>('SELECT pg_encoding_to_char(encoding) AS encoding FROM pg_database WHERE datname = current_database()')).rows[0]?.encoding;
  if (encoding !== 'UTF8') throw new DatabaseEncodingError(encoding ?? 'unknown');
}

/** Throw SchemaAheadError when the database holds a migration this Interlock does not ship. */
export async function refuseNewerPgSchema(client: pg.ClientBase): Promise<DatabaseSchema> {
  const found = await pgDatabaseSchema(client);
  if (found.unknown > 0 || found.schema > knownPgMigrations().length) throw new SchemaAheadError(found, knownPgMigrations().length);
  return found;
}

/**
 * Bring the database at `ownerUrl` to this Interlock's schema, as its owner, in one transaction:
 * refuse a database not in UTF8 or at a newer schema, apply each missing migration, record this
 * Interlock, and grant the application's role (`appRole`) what APP_PRIVILEGES says. Safe when processes race to do it.
 */
export async function migratePg(ownerUrl: string, options: { appRole?: string; nowMs?: number; connectTimeoutMs?: number } = {}): Promise<DatabaseSchema> {
  const client = new pg.Client({
    connectionString: ownerUrl,
    application_name: 'interlock-migrate',
    ...(options.connectTimeoutMs === undefined ? {} : { connectionTimeoutMillis: options.connectTimeoutMs }),
  });
  // A connection lost mid-migration rejects the statement in flight; the client's 'error' event,
  // unheard, would end the process instead.
  client.on('error', () => {});
  await client.connect();
  try {
    await refuseNonUtf8Database(client);
    await client.query('BEGIN');
    await client.query(MIGRATE_LOCK_SQL);
    await client.query(LEDGER_SQL);
    const found = await refuseNewerPgSchema(client);
    const nowMs = options.nowMs ?? Date.now();
    for (const migration of knownPgMigrations().slice(found.schema)) {
      await client.query(migration.sql);
      await client.query('INSERT INTO interlock_migrations (version, name, applied_at_ms) VALUES ($1, $2, $3)', [migration.version, migration.name, nowMs]);
    }
    const schema = knownPgMigrations().length;
    await client.query('INSERT INTO schema_versions (schema, interlock, migrated_at_ms) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING', [schema, INTERLOCK_VERSION, nowMs]);
    if (options.appRole !== undefined) {
      const role = pg.escapeIdentifier(options.appRole);
      for (const [table, privileges] of Object.entries(APP_PRIVILEGES)) await client.query(`GRANT ${privileges} ON ${pg.escapeIdentifier(table)} TO ${role}`);
    }
    await client.query('COMMIT');
    return await pgDatabaseSchema(client);
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {});
    throw error;
  } finally {
    await client.end();
  }
}

/** A database the migrations have not brought to this Interlock's schema yet: the owner must run them first. */
export class SchemaBehindError extends Error {
  readonly code = 'schema_behind';

  constructor(readonly found: DatabaseSchema) {
    super(`this database is at schema ${found.schema}; this Interlock needs schema ${knownPgMigrations().length}: run the migrations as the database's owner first`);
    this.name = 'SchemaBehindError';
  }
}

/**
 * Check, as the application's role, that the database is in UTF8 and at exactly this Interlock's
 * schema before anything is written: a newer one is refused (SchemaAheadError), as on SQLite, and so is
 * one not migrated yet (SchemaBehindError), since this role may not migrate it.
 */
export async function checkPgSchema(pool: pg.Pool): Promise<DatabaseSchema> {
  const client = await pool.connect();
  try {
    await refuseNonUtf8Database(client);
    const found = await refuseNewerPgSchema(client);
    if (found.schema < knownPgMigrations().length) throw new SchemaBehindError(found);
    return found;
  } finally {
    client.release();
  }
}
