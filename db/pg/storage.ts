import pg from 'pg';
import { type DatabaseSchema, SchemaAheadError } from '../schema-version.ts';
import { StoreUnreachableError, StoreUnsupportedError } from '../port/errors.ts';
import type { Storage, StoredIntegrity } from '../port/storage.ts';
import type { SignalChannel } from '../port/signals.ts';
import { PgBudgetSlots } from './budget-slots.ts';
import { PgCheckpoints } from './checkpoints.ts';
import { PgDerivedTables } from './derived.ts';
import { PgGrants } from './grants.ts';
import { pgGuardProblems } from './guards.ts';
import { PgJournal } from './journal.ts';
import { PgLeases } from './leases.ts';
import { PgLoginThrottles } from './login-throttles.ts';
import { checkPgSchema, DatabaseEncodingError, migratePg, pgDatabaseSchema, SchemaBehindError } from './migrate.ts';
import { openPgPool, pgQuery } from './pool.ts';
import { PgSessions } from './sessions.ts';
import { PG_LISTEN_APPLICATION_NAME, PgSignals, type PgSignalsOptions } from './signals.ts';

// The storage on PostgreSQL: every store of the port over one pool of the application's role.
// The owner role migrates the database first; the application's role then checks it is at this
// Interlock's schema, as SQLite's start does, before anything is read or written.

/** Where the storage is: the application's URL, and the owner's that runs the migrations. */
export interface PgStorageOptions {
  /** `DATABASE_URL`: the application's role, which may do only what APP_PRIVILEGES grants. */
  url: string;
  /** `DATABASE_MIGRATE_URL`: the database's owner, who applies the migrations and grants the application's role. */
  migrateUrl: string;
  /** `DATABASE_LISTEN_URL` (`url`): where the signals between servers are listened for, on one connection outside the pool; a direct one, not through a transaction pooler. */
  listenUrl?: string;
  /** Connections of the pool (pool.ts `poolMaxDefault` unless given: `DATABASE_POOL_MAX`). */
  max?: number;
  /** How long reaching the database may take at start before it is refused as unreachable, in ms. */
  connectTimeoutMs?: number;
}

/** A database reached within this long, or refused at start. */
const connectTimeoutMsDefault = 10_000;

/** What an operator uses instead of a file copy of a PostgreSQL database. */
export const PG_BACKUP_ADVICE =
  "back up PostgreSQL with its own tools: pg_dump (as the database's owner) or a base backup with WAL archiving (pg_basebackup), see docs/operators/postgresql.md";

/** A URL as an operator may see it: the role, host, port and database, never the password or the query. */
export function pgLocation(url: string): string {
  if (!URL.canParse(url)) return 'postgresql://(a URL that does not parse)';
  const parsed = new URL(url);
  const user = parsed.username === '' ? '' : `${parsed.username}@`;
  return `${parsed.protocol}//${user}${parsed.host}${parsed.pathname}`;
}

// SQLSTATE classes of a database that refused the login or is not there: 08 connection
// exception, 28 invalid authorization, 3D invalid catalog name (no such database).
const UNREACHABLE_SQLSTATE = /^(08|28|3D)/;
const UNREACHABLE_NODE_CODES: ReadonlySet<string> = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ECONNRESET', 'ENOENT']);

/** True for an error that means the database could not be reached or logged into, not a problem of what it holds. */
function isUnreachable(error: unknown): error is Error {
  if (!(error instanceof Error)) return false;
  const code = 'code' in error && typeof error.code === 'string' ? error.code : '';
  if (UNREACHABLE_NODE_CODES.has(code) || UNREACHABLE_SQLSTATE.test(code)) return true;
  return /timeout|terminated unexpectedly|Connection terminated/i.test(error.message);
}

/** The refusals of a database that start-up gives as they are: each names what the operator does. */
function isSchemaRefusal(error: unknown): boolean {
  return error instanceof MigrationRefusedError || error instanceof SchemaAheadError || error instanceof SchemaBehindError || error instanceof DatabaseEncodingError;
}

/** The role the application's URL logs in as, granted its privileges by the migration; none when the URL names none. */
function appRoleOf(url: string, migrateUrl: string): string | undefined {
  const role = URL.canParse(url) ? decodeURIComponent(new URL(url).username) : '';
  const owner = URL.canParse(migrateUrl) ? decodeURIComponent(new URL(migrateUrl).username) : '';
  return role === '' || role === owner ? undefined : role;
}

/**
 * Open the storage on PostgreSQL: migrate the database as its owner (`migrateUrl`), then check as
 * the application's role (`url`) that it is at exactly this Interlock's schema, and in UTF8. A
 * database that cannot be reached or logged into is StoreUnreachableError; a schema it refuses,
 * SchemaAheadError, SchemaBehindError or DatabaseEncodingError.
 */
export async function openPgStorage(options: PgStorageOptions): Promise<Storage> {
  const location = pgLocation(options.url);
  const connectTimeoutMs = options.connectTimeoutMs ?? connectTimeoutMsDefault;
  const pool = openPgPool({ url: options.url, max: options.max, applicationName: 'interlock', connectTimeoutMs });
  try {
    // Given one URL only, a database migrated already (`npm run migrate` as its owner) is opened
    // as it is: the application's role could not run the migrations, and needs none.
    const current = options.migrateUrl === options.url && (await refuseUnreachable(location, () => isAtKnownSchema(pool)));
    if (!current) {
      const appRole = appRoleOf(options.url, options.migrateUrl);
      await refuseUnreachable(pgLocation(options.migrateUrl), () => migrateAsOwner(options.migrateUrl, { connectTimeoutMs, ...(appRole === undefined ? {} : { appRole }) }));
    }
    await refuseUnreachable(location, () => checkPgSchema(pool));
  } catch (error) {
    await pool.end().catch(() => {});
    throw error;
  }
  return pgStorageOver(pool, location, { listenUrl: options.listenUrl ?? options.url });
}

/** The application names Interlock's servers connect as: the pool's, and the listening connection's. */
const SERVER_APPLICATION_NAMES = ['interlock', PG_LISTEN_APPLICATION_NAME];

/** A storage an operator's tool opened as it is, with what only a tool asks of the database. */
export interface PgToolStorage {
  storage: Storage;
  /** Connections of Interlock servers to this database now (by their application name), this tool's own left out. */
  serversConnected(): Promise<number>;
}

/**
 * Open the storage on PostgreSQL for an operator's tool (the export, a restore), as it is: nothing
 * is migrated, and a database not at exactly this Interlock's schema is refused (SchemaBehindError,
 * SchemaAheadError), as is one not in UTF8 or not reached (StoreUnreachableError). The tool's
 * connections are named `interlock-<tool>`, so they are never counted as a server's.
 */
export async function openPgToolStorage(options: { url: string; tool: string; connectTimeoutMs?: number }): Promise<PgToolStorage> {
  const location = pgLocation(options.url);
  const pool = openPgPool({ url: options.url, max: 4, applicationName: `interlock-${options.tool}`, connectTimeoutMs: options.connectTimeoutMs ?? connectTimeoutMsDefault });
  try {
    await refuseUnreachable(location, () => checkPgSchema(pool));
  } catch (error) {
    await pool.end().catch(() => {});
    throw error;
  }
  const serversConnected = async () => {
    const sql = 'SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND application_name = ANY($1::text[])';
    return (await pgQuery<{ n: number }>(pool, sql, [SERVER_APPLICATION_NAMES])).rows[0]?.n ?? 0;
  };
  return { storage: pgStorageOver(pool, location, { listenUrl: options.url }), serversConnected };
}

/** True when the database is at exactly this Interlock's schema; false when it still lacks migrations (a newer one is refused). */
async function isAtKnownSchema(pool: pg.Pool): Promise<boolean> {
  try {
    await checkPgSchema(pool);
    return true;
  } catch (error) {
    if (error instanceof SchemaBehindError) return false;
    throw error;
  }
}

/** `fn`, with an error of a database it could not reach turned into StoreUnreachableError naming `location`. */
async function refuseUnreachable<T>(location: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (error) {
    if (isSchemaRefusal(error) || !isUnreachable(error)) throw error;
    const said = error.message.replace(/\s+/g, ' ').trim() || ('code' in error ? String(error.code) : 'no answer');
    throw new StoreUnreachableError(`the database at ${location} cannot be reached or logged into: ${said}`, { cause: error });
  }
}

/** The migrating role may not change the schema (not the database's owner): nothing was migrated. */
export class MigrationRefusedError extends Error {
  readonly code = 'migration_refused';
}

/** PostgreSQL's insufficient_privilege, as a role that owns nothing meets it creating a table. */
const INSUFFICIENT_PRIVILEGE = '42501';

/** The migrations as the owner's URL runs them; a role that may not run them is MigrationRefusedError. */
async function migrateAsOwner(migrateUrl: string, options: { connectTimeoutMs: number; appRole?: string }): Promise<void> {
  try {
    await migratePg(migrateUrl, options);
  } catch (error) {
    if (!(error instanceof Error && 'code' in error && error.code === INSUFFICIENT_PRIVILEGE)) throw error;
    const said = error.message.replace(/\s+/g, ' ');
    throw new MigrationRefusedError(`the role of ${pgLocation(migrateUrl)} may not migrate the database (${said}): set DATABASE_MIGRATE_URL to the database owner's URL`, { cause: error });
  }
}

/** The database's schema as the migrations left it, read with the owner's URL and nothing changed: what `npm run migrate --dry-run` shows. */
export async function readPgSchema(migrateUrl: string): Promise<DatabaseSchema> {
  const client = new pg.Client({ connectionString: migrateUrl, application_name: 'interlock-migrate', connectionTimeoutMillis: connectTimeoutMsDefault });
  client.on('error', () => {});
  await refuseUnreachable(pgLocation(migrateUrl), () => client.connect());
  try {
    return await pgDatabaseSchema(client);
  } finally {
    await client.end();
  }
}

/** Bring the database to this Interlock's schema as its owner, granting the application's role (`npm run migrate`): the schema it is at then. */
export async function migratePgStorage(options: { url: string; migrateUrl: string }): Promise<DatabaseSchema> {
  const appRole = appRoleOf(options.url, options.migrateUrl);
  await refuseUnreachable(pgLocation(options.migrateUrl), () => migrateAsOwner(options.migrateUrl, { connectTimeoutMs: connectTimeoutMsDefault, ...(appRole === undefined ? {} : { appRole }) }));
  return readPgSchema(options.migrateUrl);
}

/** The checks start-up runs on the stored rows of a PostgreSQL database. */
function pgIntegrity(pool: pg.Pool): StoredIntegrity {
  const one = async <R extends pg.QueryResultRow>(sql: string): Promise<R | undefined> => (await pgQuery<R>(pool, sql)).rows[0];
  return {
    guardProblems: () => pgGuardProblems(pool),
    rowOutsideTheOrder: async () => {
      const row = await one<{ seq: number; effect_id: string }>('SELECT seq, effect_id FROM entries WHERE seq < 1 ORDER BY seq LIMIT 1');
      return row === undefined ? null : { seq: row.seq, effectId: row.effect_id };
    },
    // Every entry is sealed as it is written here: entries without a seal were never written by Interlock.
    needsSealing: async () => (await one<{ needs: boolean }>('SELECT EXISTS (SELECT 1 FROM entries) AND NOT EXISTS (SELECT 1 FROM journal_seals) AS needs'))?.needs === true,
    sealUnsealed: async () => {
      throw new StoreUnsupportedError('a journal on PostgreSQL is sealed as each entry is written and never afterwards: entries without their seals were not written by Interlock, or their seals were removed; nothing was changed');
    },
    backupTo: async () => {
      throw new StoreUnsupportedError(`Interlock does not copy a PostgreSQL database to a file: ${PG_BACKUP_ADVICE}`);
    },
  };
}

/**
 * The storage over `pool` (the application's role, already checked), its signals listened for at
 * `signals.listenUrl`; closing it ends the pool and the listening connection.
 */
export function pgStorageOver(pool: pg.Pool, location: string, signalsOptions: Omit<PgSignalsOptions, 'pool'>): Storage {
  const budgetSlots = new PgBudgetSlots({ pool });
  const signals = new PgSignals({ pool, ...signalsOptions });
  // Each write that adds entries notifies `interlock_journal` with its COMMIT (in the statement
  // that moves the head), so every other server catches up now rather than at its next poll; a
  // wake-up lost (a listener reconnecting) is found by that poll.
  const notify: SignalChannel = 'interlock_journal';
  let closing: Promise<void> | null = null;
  return {
    location,
    engine: 'postgresql',
    journal: (journalOptions) => new PgJournal({ pool, notify, ...journalOptions }),
    sessions: new PgSessions({ pool }),
    grants: (nowMs) => new PgGrants({ pool, nowMs }),
    checkpoints: new PgCheckpoints({ pool }),
    // Every process on the database shares the budget, so never null here.
    budgetSlots,
    derived: new PgDerivedTables({ pool }),
    // Shared by every server on the database: one of them runs each piece of background work.
    leases: new PgLeases({ pool }),
    // Shared by every server on the database: a failure on one counts on all of them.
    loginThrottles: new PgLoginThrottles({ pool }),
    signals,
    integrity: pgIntegrity(pool),
    // The pool ends once the clients checked out are given back: work in flight finishes first. Closing twice closes once.
    close: () => {
      closing ??= (async () => {
        await budgetSlots.close();
        await signals.close();
        await pool.end();
      })();
      return closing;
    },
  };
}
