import { execFile, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { migratePg } from '../../db/pg/migrate.ts';

// A throwaway PostgreSQL cluster for the tests: one per test process, started on first use from
// Debian's PostgreSQL 15 binaries, stopped when the process exits. Its data and its unix socket live
// in a temp folder owned by `postgres`, since initdb and pg_ctl refuse to run as root; it listens
// on a free port of 127.0.0.1 (never 5432, never a cluster Debian started) with fsync off (the
// tests kill Interlock, never the machine). Each suite gets a fresh database, migrated by an owner
// role; the application's role connects with a password over TCP and may do only what
// db/pg/migrate.ts grants it. Nothing here imports a driver: the cluster is run with its own
// programs (initdb, pg_ctl, psql), and Interlock's code connects through db/ alone.

const run = promisify(execFile);

/** Where Debian puts PostgreSQL 15's server programs (not on PATH). */
export const POSTGRES_BIN = '/usr/lib/postgresql/15/bin';

/** The role that owns each database and runs its migrations, and the one Interlock runs as. */
export const OWNER_ROLE = 'interlock_owner';
export const APP_ROLE = 'interlock_app';

/** True when PostgreSQL 15 is installed where the tests look for it. */
export function postgresInstalled(): boolean {
  return fs.existsSync(path.join(POSTGRES_BIN, 'initdb'));
}

/**
 * Set in the environment once the skip line was printed for the whole run (by vitest's global
 * setup, postgresSkipNotice below), so the test processes it then starts each stay quiet.
 */
export const SKIP_TOLD_ENV = 'INTERLOCK_POSTGRES_SKIP_TOLD';

/** Whether this process, or the run that started it, has said the PostgreSQL suites are skipped. */
const skipNotice = { told: process.env[SKIP_TOLD_ENV] === '1' };

/**
 * Whether the PostgreSQL suites can run here. With CI=true a missing PostgreSQL is a failure (the
 * error names the script that installs it); elsewhere one line says the PostgreSQL suites are
 * skipped: vitest's global setup prints it for the run, or else the first suite of each process. `installed`, `ci`, `log` and `notice` are this process's unless given.
 */
export function postgresOrSkip(
  suite: string,
  {
    installed = postgresInstalled(),
    ci = process.env.CI === 'true',
    log = console.log,
    notice = skipNotice,
  }: { installed?: boolean; ci?: boolean; log?: (line: string) => void; notice?: { told: boolean } } = {},
): boolean {
  if (installed) return true;
  const missing = `PostgreSQL 15 is missing (${POSTGRES_BIN}/initdb): run scripts/ensure-postgres.sh`;
  if (ci) throw new Error(`${missing}; ${suite} cannot run with CI=true`);
  if (!notice.told) log(`skipped the PostgreSQL suites (${suite} first): ${missing}`);
  notice.told = true;
  return false;
}

/**
 * Vitest's global setup (vitest.config.ts), run once before any test process starts: where the
 * PostgreSQL suites will be skipped, say so in one line for the whole run, and tell the test
 * processes (they inherit `env`) not to say it again, one line each. Under CI=true it says
 * nothing: each suite fails, naming the script to run.
 */
export function postgresSkipNotice({
  installed = postgresInstalled(),
  ci = process.env.CI === 'true',
  log = console.log,
  env = process.env,
}: { installed?: boolean; ci?: boolean; log?: (line: string) => void; env?: NodeJS.ProcessEnv } = {}): void {
  if (installed || ci || env[SKIP_TOLD_ENV] === '1') return;
  log(`skipped the PostgreSQL suites: PostgreSQL 15 is missing (${POSTGRES_BIN}/initdb): run scripts/ensure-postgres.sh`);
  env[SKIP_TOLD_ENV] = '1';
}

/** A running cluster: where to reach it, its roles' passwords, and SQL as its superuser. */
export interface PgCluster {
  port: number;
  socketDir: string;
  ownerPassword: string;
  appPassword: string;
  /** Run `sql` as the superuser over the unix socket (trusted there, and only there), in `database`; its output, unaligned. */
  psql(database: string, sql: string): Promise<string>;
  /**
   * Stop the cluster (fast: sessions are ended), run `whileDown`, and start it again on the same
   * port; resolves once it accepts connections again, with when that was (`Date.now()`).
   */
  restart(whileDown?: () => Promise<void>): Promise<{ upAtMs: number }>;
}

/** A database of the cluster, as the owner and the application reach it. */
export interface PgDatabase {
  name: string;
  ownerUrl: string;
  appUrl: string;
}

let started: Promise<PgCluster> | null = null;
let databasesMade = 0;

/** The cluster of this test process, started on first use. */
export function postgresCluster(): Promise<PgCluster> {
  started ??= startCluster();
  return started;
}

const asRoot = process.getuid?.() === 0;

/** Run a PostgreSQL program as `postgres` when we are root (it refuses root), else as ourselves. */
function asPostgres(program: string, args: string[]): [string, string[]] {
  const file = path.join(POSTGRES_BIN, program);
  return asRoot ? ['runuser', ['-u', 'postgres', '--', file, ...args]] : [file, args];
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address !== null ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

/** Tries at starting the cluster: a port found free can be taken by another process before PostgreSQL binds it. */
const startAttemptsMax = 3;

/** Start the cluster in `data` on `port` of 127.0.0.1, its socket in `dir`, and wait until it accepts connections. */
async function startOn(data: string, dir: string, port: number): Promise<void> {
  const options = `-p ${port} -k ${dir} -c fsync=off -c full_page_writes=off -c listen_addresses=127.0.0.1 -c max_connections=300`;
  const [pgCtl, startArgs] = asPostgres('pg_ctl', ['-D', data, '-l', path.join(dir, 'log'), '-w', '-o', options, 'start']);
  await run(pgCtl, startArgs);
}

/** Start the cluster in `data` on a free port of 127.0.0.1, its socket in `dir`; the port. */
async function startOnFreePort(data: string, dir: string): Promise<number> {
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    try {
      await startOn(data, dir, port);
      return port;
    } catch (error) {
      if (attempt >= startAttemptsMax) throw error;
    }
  }
}

async function startCluster(): Promise<PgCluster> {
  if (!postgresInstalled()) throw new Error(`PostgreSQL 15 is missing (${POSTGRES_BIN}/initdb): run scripts/ensure-postgres.sh`);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'interlock-pg-'));
  if (asRoot) execFileSync('chown', ['postgres:', dir]);
  const data = path.join(dir, 'data');
  const [initdb, initdbArgs] = asPostgres('initdb', ['-D', data, '-E', 'UTF8', '--locale=C', '-U', 'postgres', '--auth-local=trust', '--auth-host=scram-sha-256']);
  await run(initdb, initdbArgs);
  const port = await startOnFreePort(data, dir);
  const [, stopArgs] = asPostgres('pg_ctl', ['-D', data, '-m', 'immediate', 'stop']);
  const stop = () => {
    try {
      execFileSync(asRoot ? 'runuser' : path.join(POSTGRES_BIN, 'pg_ctl'), stopArgs, { stdio: 'ignore' });
    } catch {
      // Stopped already (by the watchdog below).
    }
    fs.rmSync(dir, { recursive: true, force: true });
  };
  process.once('exit', stop);
  watchOver(dir, [asRoot ? 'runuser' : path.join(POSTGRES_BIN, 'pg_ctl'), ...stopArgs]);

  const psql = async (database: string, sql: string): Promise<string> => {
    const args = ['-h', dir, '-p', String(port), '-U', 'postgres', '-d', database, '-XAtq', '-v', 'ON_ERROR_STOP=1', '-c', sql];
    return (await run(path.join(POSTGRES_BIN, 'psql'), args)).stdout;
  };
  const restart = async (whileDown?: () => Promise<void>): Promise<{ upAtMs: number }> => {
    const [pgCtl, fastStopArgs] = asPostgres('pg_ctl', ['-D', data, '-m', 'fast', '-w', 'stop']);
    await run(pgCtl, fastStopArgs);
    await whileDown?.();
    await startOn(data, dir, port);
    return { upAtMs: Date.now() };
  };
  const ownerPassword = randomBytes(12).toString('hex');
  const appPassword = randomBytes(12).toString('hex');
  await psql('postgres', `CREATE ROLE ${OWNER_ROLE} LOGIN PASSWORD '${ownerPassword}'; CREATE ROLE ${APP_ROLE} LOGIN PASSWORD '${appPassword}'`);
  return { port, socketDir: dir, ownerPassword, appPassword, psql, restart };
}

/**
 * A process killed with SIGKILL runs no exit handler: a shell that outlives it stops the cluster
 * and removes its folder once the process is gone.
 */
function watchOver(dir: string, stopCommand: string[]): void {
  const quoted = stopCommand.map((word) => `'${word}'`).join(' ');
  const script = `while kill -0 ${process.pid} 2>/dev/null; do sleep 1; done; ${quoted} >/dev/null 2>&1; rm -rf '${dir}'`;
  spawn('bash', ['-c', script], { detached: true, stdio: 'ignore' }).unref();
}

function urlsOf(cluster: PgCluster, name: string): PgDatabase {
  const at = `127.0.0.1:${cluster.port}/${name}`;
  return { name, ownerUrl: `postgresql://${OWNER_ROLE}:${cluster.ownerPassword}@${at}`, appUrl: `postgresql://${APP_ROLE}:${cluster.appPassword}@${at}` };
}

function nameFor(label: string): string {
  databasesMade += 1;
  return `${label.toLowerCase().replace(/[^a-z0-9]+/g, '_').slice(0, 40)}_${process.pid}_${databasesMade}`;
}

/** A database made from template0 in UTF8, owned by the owner role and not migrated: what an operator creates before the first start. */
export async function emptyPgDatabase(label: string): Promise<PgDatabase> {
  const cluster = await postgresCluster();
  const name = nameFor(label);
  await cluster.psql('postgres', `CREATE DATABASE ${name} OWNER ${OWNER_ROLE} TEMPLATE template0 ENCODING 'UTF8'`);
  return urlsOf(cluster, name);
}

/** A fresh database made from template0 and migrated by its owner, Interlock's role granted what it may do. */
export async function freshPgDatabase(label: string): Promise<PgDatabase> {
  const cluster = await postgresCluster();
  const name = nameFor(label);
  await cluster.psql('postgres', `CREATE DATABASE ${name} OWNER ${OWNER_ROLE} TEMPLATE template0 ENCODING 'UTF8'`);
  const database = urlsOf(cluster, name);
  await migratePg(database.ownerUrl, { appRole: APP_ROLE });
  return database;
}

/** A copy of `template` (nobody may be connected to it): a fresh migrated database in a tenth of the time. */
export async function copyPgDatabase(template: PgDatabase, label: string): Promise<PgDatabase> {
  const cluster = await postgresCluster();
  const name = nameFor(label);
  await cluster.psql('postgres', `CREATE DATABASE ${name} OWNER ${OWNER_ROLE} TEMPLATE ${template.name} STRATEGY FILE_COPY`);
  return urlsOf(cluster, name);
}

/** Drop a database, ending whatever is still connected to it. */
export async function dropPgDatabase(database: PgDatabase): Promise<void> {
  await (await postgresCluster()).psql('postgres', `DROP DATABASE IF EXISTS ${database.name} WITH (FORCE)`);
}
