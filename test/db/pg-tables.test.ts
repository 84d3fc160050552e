import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { PgGrants } from '../../db/pg/grants.ts';
import { APP_PRIVILEGES } from '../../db/pg/migrate.ts';
import { openPgPool } from '../../db/pg/pool.ts';
import { PgSessions } from '../../db/pg/sessions.ts';
import { cleanUpDatabases, openTempDatabase } from '../support/db-journals.ts';
import { APP_ROLE, dropPgDatabase, freshPgDatabase, type PgDatabase, postgresOrSkip } from '../support/postgres.ts';

// The PostgreSQL tables besides the journal's hold what SQLite's do: people's sessions and
// approval grants have the same columns, keys and indexes, ids compared byte by byte; and the
// application's role holds exactly what APP_PRIVILEGES grants it, table by table.

const available = postgresOrSkip('the PostgreSQL tables test (test/db/pg-tables.test.ts)');

/** The tables kept alike on both stores, as port implementations of their own read them. */
const SHARED_TABLES = ['sessions', 'grants', 'work_leases'] as const;

/** A SQLite column's type as PostgreSQL should keep it: integers (ms, cents) as int8. */
const PG_TYPE_OF: Record<string, string> = { integer: 'bigint', text: 'text' };

/** The text columns compared or looked up by value, byte by byte as SQLite does (COLLATE "C"); a token is only kept and read back. */
const COLLATED_C = ['grants.lease_id', 'sessions.id_hash', 'sessions.name', 'work_leases.name', 'work_leases.holder'];

describe.skipIf(!available)('the PostgreSQL sessions and grants tables', () => {
  let database: PgDatabase;
  let app: ReturnType<typeof openPgPool>;
  beforeAll(async () => {
    database = await freshPgDatabase('tables');
    app = openPgPool({ url: database.appUrl, max: 2 });
  });
  afterEach(cleanUpDatabases);
  afterAll(async () => {
    await app?.end();
    if (database !== undefined) await dropPgDatabase(database);
  });

  it('the application role holds exactly APP_PRIVILEGES, table by table, and nothing on any other table', async () => {
    const held = await app.query<{ table_name: string; privileges: string }>(
      "SELECT table_name, string_agg(privilege_type, ', ' ORDER BY privilege_type) AS privileges FROM information_schema.role_table_grants WHERE grantee = $1 AND table_schema = 'public' GROUP BY table_name ORDER BY table_name",
      [APP_ROLE],
    );
    const granted = Object.entries(APP_PRIVILEGES)
      .map(([table, privileges]) => ({ table_name: table, privileges: privileges.split(', ').sort().join(', ') }))
      .sort((a, b) => (a.table_name < b.table_name ? -1 : 1));
    expect(held.rows).toEqual(granted);
    expect(APP_PRIVILEGES).toMatchObject({ sessions: 'SELECT, INSERT, UPDATE, DELETE', grants: 'SELECT, INSERT, UPDATE' });
  });

  it('a grant is never deleted nor a table emptied by the application role: it is revoked in place', async () => {
    await new PgGrants({ pool: app, nowMs: () => 1 }).grant('L-1');
    await expect(app.query('DELETE FROM grants')).rejects.toThrow(/permission denied/);
    for (const table of SHARED_TABLES) await expect(app.query(`TRUNCATE ${table}`)).rejects.toThrow(/permission denied/);
    await expect(app.query('ALTER TABLE sessions ADD COLUMN x int')).rejects.toThrow(/must be owner/);
    const sessions = new PgSessions({ pool: app });
    await sessions.create('h-1', { name: 'ana', csrfToken: 'c', createdAtMs: 1, lastSeenAtMs: 1 });
    expect(await sessions.endFor(new Set(['ana']))).toEqual(['h-1']);
  });

  it('sessions, grants and work leases have the columns, keys and indexes of their SQLite tables, ids COLLATE "C", times int8', async () => {
    const { sqlite } = openTempDatabase();
    for (const table of SHARED_TABLES) {
      const sqliteColumns = sqlite.prepare(`PRAGMA table_info(${table})`).all() as { name: string; type: string; notnull: number; pk: number }[];
      const pgColumns = await app.query<{ column_name: string; data_type: string; is_nullable: string; collation_name: string | null }>(
        "SELECT column_name, data_type, is_nullable, collation_name FROM information_schema.columns WHERE table_schema = 'public' AND table_name = $1 ORDER BY ordinal_position",
        [table],
      );
      const pgKey = await app.query<{ column_name: string }>(
        "SELECT k.column_name FROM information_schema.table_constraints AS c JOIN information_schema.key_column_usage AS k USING (constraint_schema, constraint_name) WHERE c.table_name = $1 AND c.constraint_type = 'PRIMARY KEY' ORDER BY k.ordinal_position",
        [table],
      );
      expect(
        pgColumns.rows.map((c) => `${c.column_name} ${c.data_type} ${c.is_nullable === 'NO' ? 'not null' : 'null'}`),
        table,
      ).toEqual(sqliteColumns.map((c) => `${c.name} ${PG_TYPE_OF[c.type.toLowerCase()]} ${c.notnull === 1 || c.pk === 1 ? 'not null' : 'null'}`));
      expect(
        pgColumns.rows.filter((c) => c.collation_name === 'C').map((c) => `${table}.${c.column_name}`),
        table,
      ).toEqual(COLLATED_C.filter((column) => column.startsWith(`${table}.`)));
      expect(pgKey.rows.map((k) => k.column_name), table).toEqual(sqliteColumns.filter((c) => c.pk > 0).map((c) => c.name));
      // Beside the primary key's, neither store indexes these tables.
      const sqliteIndexes = (sqlite.prepare(`PRAGMA index_list(${table})`).all() as { name: string; origin: string }[]).filter((i) => i.origin !== 'pk').map((i) => i.name);
      const pgIndexes = await app.query<{ name: string }>(
        'SELECT c.relname AS name FROM pg_index AS i JOIN pg_class AS c ON c.oid = i.indexrelid WHERE i.indrelid = $1::regclass AND NOT i.indisprimary ORDER BY c.relname',
        [table],
      );
      expect(pgIndexes.rows.map((i) => i.name), table).toEqual(sqliteIndexes);
    }
  });
});
