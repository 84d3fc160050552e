import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EnvError, parseEnv, storagePlace } from '../../server/config/env.ts';
import { dropPgDatabase, emptyPgDatabase, type PgDatabase, postgresCluster, postgresOrSkip } from '../support/postgres.ts';
import { freePort, runServerToExit, writeTestConfig } from '../support/server-process.ts';

// DATABASE_URL and DATABASE_MIGRATE_URL as start-up reads them: a value that is no PostgreSQL URL,
// an owner's URL without the application's, a database that cannot be reached or logged into, and
// a role that may not migrate, and a checkpoint mirror only one host sees, are each one line and
// exit 2, the password never shown, and nothing written to the data folder or the database.

const available = postgresOrSkip('the PostgreSQL environment refusals (test/db/pg-server-env.test.ts)');

const SECRET = 's3cret-pw';

function refusal(env: Record<string, string>): string {
  try {
    parseEnv(env);
  } catch (error) {
    if (error instanceof EnvError) return error.message;
    throw error;
  }
  throw new Error(`parseEnv accepted ${JSON.stringify(env)}`);
}

describe('DATABASE_URL and DATABASE_MIGRATE_URL as parseEnv reads them', () => {
  it('unset, the journal stays in the SQLite file; set, the migrate URL defaults to it', () => {
    expect(parseEnv({})).toMatchObject({ databaseUrl: null, databaseMigrateUrl: null });
    const url = 'postgresql://interlock_app:pw@db.internal:5432/interlock';
    expect(parseEnv({ DATABASE_URL: url })).toMatchObject({ databaseUrl: url, databaseMigrateUrl: url });
    const owner = 'postgres://interlock_owner:pw@db.internal/interlock';
    expect(parseEnv({ DATABASE_URL: url, DATABASE_MIGRATE_URL: owner })).toMatchObject({ databaseUrl: url, databaseMigrateUrl: owner });
  });

  it('listens for the other servers on DATABASE_LISTEN_URL, which defaults to DATABASE_URL', () => {
    const url = 'postgresql://interlock_app:pw@pooler.internal:6432/interlock';
    const direct = 'postgresql://interlock_app:pw@db.internal:5432/interlock';
    expect(parseEnv({ DATABASE_URL: url })).toMatchObject({ databaseListenUrl: url });
    expect(parseEnv({ DATABASE_URL: url, DATABASE_LISTEN_URL: direct })).toMatchObject({ databaseUrl: url, databaseListenUrl: direct });
    expect(storagePlace(parseEnv({ DATABASE_URL: url, DATABASE_LISTEN_URL: direct }))).toMatchObject({ kind: 'postgresql', url, listenUrl: direct });
    expect(refusal({ DATABASE_LISTEN_URL: direct })).toMatch(/^DATABASE_LISTEN_URL is set without DATABASE_URL/);
    expect(refusal({ DATABASE_URL: url, DATABASE_LISTEN_URL: `mysql://app:${SECRET}@h/db` })).toMatch(/^DATABASE_LISTEN_URL must be a postgresql:\/\/ URL/);
  });

  it('refuses what is not a postgresql:// URL naming a database, without showing its password', () => {
    for (const value of [`mysql://app:${SECRET}@h/db`, 'interlock.sqlite', `http://app:${SECRET}@h/db`]) {
      const message = refusal({ DATABASE_URL: value });
      expect(message).toMatch(/^DATABASE_URL must be a postgresql:\/\/ URL/);
      expect(message).not.toContain(SECRET);
    }
    expect(refusal({ DATABASE_URL: `postgresql://app:${SECRET}@h:5432` })).toMatch(/^DATABASE_URL must name the database/);
    expect(refusal({ DATABASE_URL: 'postgresql://app@h/db', DATABASE_MIGRATE_URL: `file://${SECRET}` })).toMatch(/^DATABASE_MIGRATE_URL must be a postgresql:\/\/ URL/);
  });

  it('refuses the owner URL alone, and a database named beside DB_PATH', () => {
    expect(refusal({ DATABASE_MIGRATE_URL: 'postgresql://owner@h/db' })).toMatch(/^DATABASE_MIGRATE_URL is set without DATABASE_URL/);
    expect(refusal({ DATABASE_URL: 'postgresql://app@h/db', DB_PATH: 'journal.sqlite' })).toMatch(/^DB_PATH and DATABASE_URL are both set/);
  });
});

describe.skipIf(!available)('npm start with a PostgreSQL database it cannot use (real process)', () => {
  let dir: string;
  let config: string;
  let database: PgDatabase;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'interlock-pg-env-'));
    config = writeTestConfig(dir, { unpaced: true });
    database = await emptyPgDatabase('server_env');
  }, 120_000);
  afterAll(async () => {
    if (database !== undefined) await dropPgDatabase(database);
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  /**
   * Start the server with `env`; it must print one line, exit 2, and leave its data folder unmade.
   * It may take a minute: beside the other PostgreSQL suites on 2 cores, tsx alone took past 30 s.
   */
  async function refusedStart(name: string, env: Record<string, string>): Promise<string> {
    const dataDir = join(dir, name);
    const { exit, stderr } = await runServerToExit({ PORT: String(await freePort()), SANDBOX_PORT: String(await freePort()), DATA_DIR: dataDir, INTERLOCK_CONFIG: config, ...env }, { timeoutMs: 60_000 });
    expect(exit, stderr).toBe('2');
    expect(stderr.trimEnd().split('\n'), stderr).toHaveLength(1);
    expect(stderr).toMatch(/^Interlock did not start: /);
    expect(stderr).not.toContain(SECRET);
    expect(existsSync(dataDir)).toBe(false);
    return stderr;
  }

  it('a value that is no PostgreSQL URL, or the owner URL alone', async () => {
    expect(await refusedStart('bad-url', { DATABASE_URL: `mysql://app:${SECRET}@127.0.0.1/db` })).toMatch(/DATABASE_URL must be a postgresql:\/\/ URL/);
    expect(await refusedStart('owner-alone', { DATABASE_MIGRATE_URL: `postgresql://owner:${SECRET}@127.0.0.1/db` })).toMatch(/DATABASE_MIGRATE_URL is set without DATABASE_URL/);
  }, 150_000);

  it('a database nobody listens for', async () => {
    const nobody = `postgresql://interlock_app:${SECRET}@127.0.0.1:${await freePort()}/interlock`;
    expect(await refusedStart('unreachable', { DATABASE_URL: nobody })).toMatch(/the database at postgresql:\/\/interlock_app@127\.0\.0\.1:\d+\/interlock cannot be reached or logged into: .*ECONNREFUSED/);
  }, 150_000);

  it('a wrong password, and a database that does not exist', async () => {
    const wrong = database.appUrl.replace(/:[^:@/]+@/, `:${SECRET}@`);
    expect(await refusedStart('wrong-password', { DATABASE_URL: wrong, DATABASE_MIGRATE_URL: wrong })).toMatch(/cannot be reached or logged into: password authentication failed/);
    expect(await refusedStart('no-database', { DATABASE_URL: database.appUrl.replace(/\/[^/]+$/, '/no_such_database') })).toMatch(/cannot be reached or logged into: database "no_such_database" does not exist/);
  }, 150_000);

  it('a checkpoint mirror in a file on this host only: refused as mirror_not_shared before the database is touched; marked shared, the start goes on', async () => {
    const withMirror = (name: string, shared: string) => {
      const path = join(dir, `${name}.yaml`);
      writeFileSync(path, `${readFileSync(config, 'utf8')}\nintegrity:\n  mirrors:\n    - file: ${join(dir, `${name}-mirror.jsonl`)}${shared}\n`);
      return path;
    };
    const perHost = await refusedStart('mirror-per-host', { DATABASE_URL: database.appUrl, INTERLOCK_CONFIG: withMirror('per-host', '') });
    expect(perHost).toMatch(/: integrity\.mirrors\[0\]\.file: mirror_not_shared: DATABASE_URL is set, so several servers may share this journal/);
    const cluster = await postgresCluster();
    expect(await cluster.psql(database.name, "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'")).toBe('0\n');
    // Marked shared, the config passes: the start goes on to the database, which this role may not migrate.
    const shared = await refusedStart('mirror-shared', { DATABASE_URL: database.appUrl, INTERLOCK_CONFIG: withMirror('shared', '\n      shared: true') });
    expect(shared).toMatch(/may not migrate the database/);
  }, 150_000);

  it('the application role given as the migrating one: refused before anything is created in the database', async () => {
    expect(await refusedStart('app-migrates', { DATABASE_URL: database.appUrl })).toMatch(/may not migrate the database .*set DATABASE_MIGRATE_URL to the database owner's URL/);
    const cluster = await postgresCluster();
    expect(await cluster.psql(database.name, "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'")).toBe('0\n');
  }, 150_000);
});
