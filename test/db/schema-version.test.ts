import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { drizzle } from 'drizzle-orm/better-sqlite3';
import { migrate } from 'drizzle-orm/better-sqlite3/migrator';
import { afterEach, describe, expect, it } from 'vitest';
import { openDatabase } from '../../db/open.ts';
import { databaseSchema, knownMigrations, knownSchema, MIGRATIONS_FOLDER, SchemaAheadError } from '../../db/schema-version.ts';
import { cleanUpDatabases, makeTempDir, tempDbFile } from '../support/db-journals.ts';
import { compiledEntry, freePort, runServerToExit, writeTestConfig } from '../support/server-process.ts';

// A database records the schema it is at (the migrations applied) and which Interlock brought it
// there. A start under an Interlock older than the database refuses in one line naming both, and
// `npm run migrate` runs the migrations on their own, or lists them with --dry-run.

afterEach(cleanUpDatabases);

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
const PACKAGE_VERSION = (JSON.parse(fs.readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as { version: string }).version;

/** A database as an Interlock that ships only the first `count` migrations leaves it (a copy of them, its own journal trimmed). */
function databaseAt(count: number, file = tempDbFile()): string {
  const folder = path.join(makeTempDir(), 'migrations');
  fs.cpSync(MIGRATIONS_FOLDER, folder, { recursive: true });
  const journalFile = path.join(folder, 'meta/_journal.json');
  const journal = JSON.parse(fs.readFileSync(journalFile, 'utf8')) as { entries: unknown[] };
  fs.writeFileSync(journalFile, JSON.stringify({ ...journal, entries: journal.entries.slice(0, count) }));
  const sqlite = new Database(file);
  migrate(drizzle({ client: sqlite }), { migrationsFolder: folder });
  sqlite.close();
  return file;
}

/** What a newer Interlock leaves: one migration more than this one ships, recorded as its own. */
function databaseOfNewerInterlock(file: string, newer: string): void {
  openDatabase(file).close();
  const sqlite = new Database(file);
  const nextMs = knownMigrations().at(-1)!.whenMs + 60_000;
  sqlite.prepare('INSERT INTO __drizzle_migrations (hash, created_at) VALUES (?, ?)').run('a-newer-migration', nextMs);
  sqlite.prepare('INSERT INTO schema_versions (schema, interlock, migrated_at_ms) VALUES (?, ?, ?)').run(knownSchema() + 1, newer, nextMs);
  sqlite.close();
}

/** A tool run as an operator runs it, in the checkout: exit code and what it printed. */
async function run(command: string, args: string[], env: Record<string, string>): Promise<{ exit: number | null; stdout: string; stderr: string }> {
  const child = spawn(command, args, { cwd: repoRoot, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exit = await new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { exit, stdout, stderr };
}

/** The migrate tool as the compiled server ships it (the run's build, test/support/server-bundle-setup.ts). */
const migrateTool = (args: string[], env: Record<string, string>) => run(process.execPath, [compiledEntry('migrate'), ...args], env);

describe('the schema a database records', () => {
  it('is the number of migrations applied, with the Interlock that applied them', () => {
    const file = tempDbFile();
    openDatabase(file).close();
    const sqlite = new Database(file, { readonly: true });
    expect(databaseSchema(sqlite)).toEqual({ schema: knownSchema(), unknown: 0, interlock: PACKAGE_VERSION });
    sqlite.close();
    expect(knownMigrations().map((m) => m.tag)).toEqual(
      fs
        .readdirSync(MIGRATIONS_FOLDER)
        .filter((name) => name.endsWith('.sql'))
        .sort()
        .map((name) => name.replace(/\.sql$/, '')),
    );
  });

  it('an older database is brought up to date and recorded as this Interlock’s', () => {
    const file = databaseAt(knownSchema() - 1);
    const before = new Database(file);
    expect(databaseSchema(before)).toEqual({ schema: knownSchema() - 1, unknown: 0, interlock: null });
    before.close();
    const opened = openDatabase(file);
    expect(databaseSchema(opened.sqlite)).toEqual({ schema: knownSchema(), unknown: 0, interlock: PACKAGE_VERSION });
    opened.close();
  });

  it('the Stripe budget’s rows of the schema before slots were named so are kept, under the new name', () => {
    const file = databaseAt(knownMigrations().findIndex((m) => m.tag === '0013_stripe_budget_slots'));
    const before = new Database(file);
    before.prepare("INSERT INTO stripe_budget_leases (account, family, slot, holder, expires_ms) VALUES ('acct', '*', 0, 'p1', 5)").run();
    before.close();
    const opened = openDatabase(file);
    const tables = opened.sqlite.prepare<[], { name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'stripe_budget_%' ORDER BY name").all();
    expect(tables.map((t) => t.name)).toEqual(['stripe_budget_slots', 'stripe_budget_wants']);
    expect(opened.sqlite.prepare('SELECT account, family, slot, holder, expires_ms FROM stripe_budget_slots').all()).toEqual([{ account: 'acct', family: '*', slot: 0, holder: 'p1', expires_ms: 5 }]);
    opened.close();
  });

  it('a database a newer Interlock migrated is refused before anything is written to it', () => {
    const file = tempDbFile();
    databaseOfNewerInterlock(file, '9.1.0');
    const bytes = fs.readFileSync(file);
    expect(() => openDatabase(file)).toThrow(SchemaAheadError);
    expect(() => openDatabase(file)).toThrow(
      `this database is at schema ${knownSchema() + 1} (Interlock 9.1.0); this Interlock knows schema ${knownSchema()} (${PACKAGE_VERSION}). Run the newer Interlock, or restore a backup taken before the upgrade.`,
    );
    expect(fs.readFileSync(file).equals(bytes)).toBe(true);
  });
});

describe('a start on a database newer than the code (real process)', () => {
  it('exits 2 with one line naming both schemas and versions and what to do', async () => {
    const dir = makeTempDir();
    const dataDir = path.join(dir, 'data');
    fs.mkdirSync(dataDir);
    databaseOfNewerInterlock(path.join(dataDir, 'interlock.sqlite'), '9.1.0');
    const { exit, stderr } = await runServerToExit({ PORT: String(await freePort()), SANDBOX_PORT: '0', DATA_DIR: dataDir, INTERLOCK_CONFIG: writeTestConfig(dir) });
    expect(exit).toBe('2');
    expect(stderr.trim().split('\n')).toEqual([
      `Interlock did not start: this database is at schema ${knownSchema() + 1} (Interlock 9.1.0); this Interlock knows schema ${knownSchema()} (${PACKAGE_VERSION}). Run the newer Interlock, or restore a backup taken before the upgrade.`,
    ]);
  });
});

describe('the migrate tool (real process)', () => {
  it('--dry-run lists what a database lacks and changes nothing; without it, applies them', async () => {
    const dir = makeTempDir();
    const file = databaseAt(knownSchema() - 2, path.join(dir, 'interlock.sqlite'));
    const bytes = fs.readFileSync(file);
    const lacking = knownMigrations()
      .slice(-2)
      .map((m) => m.tag);

    const dry = await migrateTool(['--dry-run'], { DATA_DIR: dir });
    expect(dry).toEqual({
      exit: 0,
      stdout: [`${file}: schema ${knownSchema() - 2}; this Interlock (${PACKAGE_VERSION}) knows schema ${knownSchema()}.`, '2 migrations to apply (dry run: none applied):', ...lacking.map((t) => `  ${t}`), ''].join('\n'),
      stderr: '',
    });
    expect(fs.readFileSync(file).equals(bytes)).toBe(true);

    const applied = await migrateTool([], { DATA_DIR: dir });
    expect(applied.exit, applied.stderr).toBe(0);
    expect(applied.stdout).toContain(['Applied 2 migrations:', ...lacking.map((t) => `  ${t}`)].join('\n'));
    expect(applied.stdout).toContain(`${file} is at schema ${knownSchema()} (Interlock ${PACKAGE_VERSION}).`);
    const sqlite = new Database(file, { readonly: true });
    expect(databaseSchema(sqlite).schema).toBe(knownSchema());
    sqlite.close();

    const again = await migrateTool(['--dry-run'], { DATA_DIR: dir });
    expect(again.stdout).toContain('Nothing to apply.');
  });

  it('refuses a database a newer Interlock migrated (exit 2), and a bad argument (exit 64)', async () => {
    const dir = makeTempDir();
    databaseOfNewerInterlock(path.join(dir, 'interlock.sqlite'), '9.1.0');
    const refused = await migrateTool(['--dry-run'], { DATA_DIR: dir });
    expect(refused.exit).toBe(2);
    expect(refused.stderr).toMatch(/^refused: this database is at schema \d+ \(Interlock 9\.1\.0\)/);
    const bad = await migrateTool(['--dry'], { DATA_DIR: dir });
    expect(bad.exit).toBe(64);
  });

  // The three started together: one after the other, npm and two tsx starts took 18.5 s of a
  // test's 20 s on a loaded run, and 20 s once (timed out); npm alone took 17.6 s of wall for
  // 4 CPU-seconds on the loaded machine. Each is a cold start of its own, independent of the others,
  // so together they take the longest of them. The minute is for a start that hangs: nothing here
  // is about how fast a command starts.
  it('names itself by the command that started it: npm run migrate from a clone', async () => {
    const [help, direct, compiled] = await Promise.all([
      run('npm', ['run', '--silent', 'migrate', '--', '--help'], {}),
      run(process.execPath, ['--import', 'tsx', 'server/app/migrate-cli.ts', '--help'], {}),
      migrateTool(['--help'], {}),
    ]);
    expect([help.exit, help.stdout.split('\n')[0]]).toEqual([0, 'usage: npm run migrate -- [--dry-run]']);
    expect(direct.stdout.split('\n')[0]).toBe('usage: npx tsx server/app/migrate-cli.ts [--dry-run]');
    expect(compiled.stdout.split('\n')[0]).toBe(`usage: node ${path.relative(repoRoot, compiledEntry('migrate'))} [--dry-run]`);
  }, 60_000);
});
