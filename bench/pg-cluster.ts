import { execFile, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { migratePg } from '../db/pg/migrate.ts';
import { freePort } from './ready.ts';

// The PostgreSQL 15 cluster of the bench's `postgres` stage: started as the tests start theirs
// (Debian's binaries, a temp folder owned by `postgres`, 127.0.0.1 on a free port), but with
// PostgreSQL's defaults where the tests trade durability for speed: fsync, full_page_writes and
// synchronous_commit on, so a commit is on disk when it is answered, as in production.

const run = promisify(execFile);

/** Where Debian puts PostgreSQL 15's server programs. */
const POSTGRES_BIN = '/usr/lib/postgresql/15/bin';
const OWNER_ROLE = 'interlock_owner';
const APP_ROLE = 'interlock_app';

/** A database of the bench's cluster, as its owner and the application reach it. */
export interface BenchDatabase {
  name: string;
  ownerUrl: string;
  appUrl: string;
}

/** The running cluster: SQL as its superuser, databases made on it, and its stop. */
export interface BenchCluster {
  /** Run `sql` as the superuser in `database`; its output, unaligned, tuples only. */
  psql(database: string, sql: string): Promise<string>;
  /** Run `sql` (a `COPY … FROM STDIN`) as the superuser in `database`, fed what `feed` writes to its stdin. */
  copyIn(database: string, sql: string, feed: (stdin: NodeJS.WritableStream) => Promise<void>): Promise<void>;
  /** A new database, migrated by its owner, the application's role granted what it may do. */
  database(name: string): Promise<BenchDatabase>;
  /** The server settings the measurement depends on, as the cluster reports them. */
  settings(): Promise<Record<string, string>>;
  stop(): void;
}

/** True when PostgreSQL 15 is installed where the bench looks for it. */
export function postgresInstalled(): boolean {
  return fs.existsSync(path.join(POSTGRES_BIN, 'initdb'));
}

const asRoot = process.getuid?.() === 0;

/** A PostgreSQL program as `postgres` when we are root (it refuses root), else as ourselves. */
function asPostgres(program: string, args: string[]): [string, string[]] {
  const file = path.join(POSTGRES_BIN, program);
  return asRoot ? ['runuser', ['-u', 'postgres', '--', file, ...args]] : [file, args];
}

/**
 * Start a cluster in a new folder of the system's temp folder (the `postgres` user must reach it);
 * `stop()`, or this process's exit, stops it and removes the folder. `extra` adds server settings
 * (`name=value`), such as `shared_preload_libraries=pg_stat_statements` to count statements.
 */
export async function startBenchCluster(extra: readonly string[] = []): Promise<BenchCluster> {
  if (!postgresInstalled()) throw new Error(`PostgreSQL 15 is missing (${POSTGRES_BIN}/initdb): run scripts/ensure-postgres.sh`);
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'interlock-bench-pg-'));
  if (asRoot) execFileSync('chown', ['postgres:', home]);
  const data = path.join(home, 'data');
  const [initdb, initdbArgs] = asPostgres('initdb', ['-D', data, '-E', 'UTF8', '--locale=C', '-U', 'postgres', '--auth-local=trust', '--auth-host=scram-sha-256']);
  await run(initdb, initdbArgs);
  const port = await freePort();
  // Only where and how many: every durability setting is PostgreSQL's default.
  const options = `-p ${port} -k ${home} -c listen_addresses=127.0.0.1 -c max_connections=300${extra.map((setting) => ` -c ${setting}`).join('')}`;
  const [pgCtl, startArgs] = asPostgres('pg_ctl', ['-D', data, '-l', path.join(home, 'log'), '-w', '-o', options, 'start']);
  await run(pgCtl, startArgs);
  const [stopCmd, stopArgs] = asPostgres('pg_ctl', ['-D', data, '-m', 'fast', '-w', 'stop']);
  let stopped = false;
  const stop = () => {
    if (stopped) return;
    stopped = true;
    try {
      execFileSync(stopCmd, stopArgs, { stdio: 'ignore' });
    } catch {
      // Stopped already.
    }
    fs.rmSync(home, { recursive: true, force: true });
  };
  process.once('exit', stop);
  const psqlArgs = (database: string) => ['-h', home, '-p', String(port), '-U', 'postgres', '-d', database, '-XAtq', '-v', 'ON_ERROR_STOP=1'];
  const psql = async (database: string, sql: string) => (await run(path.join(POSTGRES_BIN, 'psql'), [...psqlArgs(database), '-c', sql], { maxBuffer: 64 * 1024 * 1024 })).stdout;
  const copyIn = async (database: string, sql: string, feed: (stdin: NodeJS.WritableStream) => Promise<void>) => {
    const child = spawn(path.join(POSTGRES_BIN, 'psql'), [...psqlArgs(database), '-c', sql], { stdio: ['pipe', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    await feed(child.stdin);
    child.stdin.end();
    const code = await exited;
    if (code !== 0) throw new Error(`COPY into ${database} failed (${code}): ${stderr.trim()}`);
  };
  const ownerPassword = randomBytes(12).toString('hex');
  const appPassword = randomBytes(12).toString('hex');
  await psql('postgres', `CREATE ROLE ${OWNER_ROLE} LOGIN PASSWORD '${ownerPassword}'; CREATE ROLE ${APP_ROLE} LOGIN PASSWORD '${appPassword}'`);
  const database = async (name: string): Promise<BenchDatabase> => {
    await psql('postgres', `CREATE DATABASE ${name} OWNER ${OWNER_ROLE} TEMPLATE template0 ENCODING 'UTF8'`);
    const at = `127.0.0.1:${port}/${name}`;
    const made = { name, ownerUrl: `postgresql://${OWNER_ROLE}:${ownerPassword}@${at}`, appUrl: `postgresql://${APP_ROLE}:${appPassword}@${at}` };
    await migratePg(made.ownerUrl, { appRole: APP_ROLE });
    return made;
  };
  const settings = async () => {
    const rows = await psql('postgres', "SELECT name, setting FROM pg_settings WHERE name IN ('fsync', 'synchronous_commit', 'full_page_writes', 'wal_sync_method', 'shared_buffers', 'max_connections') ORDER BY name");
    return Object.fromEntries(rows.trim().split('\n').map((line) => line.split('|') as [string, string]));
  };
  return { psql, copyIn, database, settings, stop };
}
