import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { knownPgMigrations } from '../../db/pg/migrate.ts';
import { openServerStorage } from '../../db/server-storage.ts';
import { runMigrateCli } from '../../server/app/migrate-cli.ts';
import { BACKUP_EXIT_CODES, runBackupCli, runRestoreCli } from '../../server/backup/backup-cli.ts';
import { runExportCli } from '../../server/export/export-cli.ts';
import { EXIT_CODES } from '../../server/export/limits.ts';
import { runRebuildViewsCli } from '../../server/views/rebuild-cli.ts';
import { loadOrCreateSigningKey } from '../../server/receipts/keys.ts';
import { dropPgDatabase, emptyPgDatabase, type PgDatabase, postgresOrSkip } from '../support/postgres.ts';
import { writeTestConfig } from '../support/server-process.ts';

// The operator's tools where DATABASE_URL keeps the journal in PostgreSQL: `npm run migrate`
// migrates it as its owner, `npm run rebuild-views` rebuilds its derived tables and `npm run
// export` reads its receipts, through the storage port; the tools that copy the SQLite file
// (backup, a restore from a backup folder) refuse with `store_unsupported`, naming PostgreSQL's
// own tools, and leave nothing behind. `npm run restore -- --in-place` is test/db/pg-restore.test.ts.

const available = postgresOrSkip('the operator tools on PostgreSQL (test/db/pg-tools.test.ts)');

/** A stream that keeps what is written to it. */
function captured(): Writable & { text(): string } {
  let text = '';
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      text += chunk.toString();
      done();
    },
  });
  return Object.assign(stream, { text: () => text });
}

describe.skipIf(!available)('the operator tools on PostgreSQL', () => {
  let database: PgDatabase;
  let dir: string;
  let env: Record<string, string>;
  beforeAll(async () => {
    database = await emptyPgDatabase('tools');
    dir = mkdtempSync(join(tmpdir(), 'interlock-pg-tools-'));
    env = { DATA_DIR: join(dir, 'data'), INTERLOCK_CONFIG: writeTestConfig(dir), DATABASE_URL: database.appUrl, DATABASE_MIGRATE_URL: database.ownerUrl };
  }, 60_000);
  afterAll(async () => {
    if (database !== undefined) await dropPgDatabase(database);
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it('npm run migrate lists, then applies, the migrations as the owner; the app role alone then opens the database', async () => {
    const shipped = knownPgMigrations().length;
    const dry = captured();
    expect(await runMigrateCli(['--dry-run'], env, { stdout: dry, stderr: dry })).toBe(0);
    expect(dry.text()).toContain(`${shipped} migrations to apply (dry run: none applied):`);
    expect(dry.text()).toContain('0001_journal');
    expect(dry.text()).not.toContain(database.ownerUrl.split('@')[0]!.split(':')[2]!);
    const applied = captured();
    expect(await runMigrateCli([], env, { stdout: applied, stderr: applied })).toBe(0);
    expect(applied.text()).toContain(`Applied ${shipped} migrations:`);
    expect(applied.text()).toMatch(new RegExp(`is at schema ${shipped} `));
    const again = captured();
    expect(await runMigrateCli([], env, { stdout: again, stderr: again })).toBe(0);
    expect(again.text()).toContain('Nothing to apply.');
    // Migrated and granted: the application's role alone opens it, needing no migration.
    const storage = await openServerStorage({ kind: 'postgresql', url: database.appUrl, migrateUrl: database.appUrl });
    expect(storage.engine).toBe('postgresql');
    expect(storage.location).not.toContain(':' + database.appUrl.split(':')[2]!.split('@')[0]!);
    await storage.close();
  });

  it('npm run rebuild-views rebuilds the derived tables in the database', async () => {
    const out = captured();
    const err = captured();
    expect(await runRebuildViewsCli([], env, { stdout: out, stderr: err }), err.text()).toBe(0);
    expect(out.text()).toMatch(/^postgresql:\/\/interlock_app@127\.0\.0\.1:\d+\/tools_\w+: rebuilt the views' derived tables from 0 journal entries/);
  });

  it('backup and a restore from a backup folder refuse with store_unsupported, naming what to use, and write nothing', async () => {
    const backupDir = join(dir, 'backup');
    for (const [run, args, says] of [
      [runBackupCli, [backupDir], /^backup refused: npm run backup works on the SQLite journal file.*pg_dump/],
      [runBackupCli, [backupDir, '--since', join(dir, 'earlier')], /^backup refused: npm run backup -- --since works on the SQLite journal file.*pg_dump/],
      [runRestoreCli, [backupDir], /^restore refused: npm run restore -- <dir> works on the SQLite journal file.*pg_restore.*--in-place/],
    ] as const) {
      const err = captured();
      expect(await run([...args], env, { stdout: captured(), stderr: err })).toBe(BACKUP_EXIT_CODES.refused);
      expect(err.text()).toMatch(says);
      expect(existsSync(backupDir)).toBe(false);
    }
    expect(existsSync(join(dir, 'data', 'interlock.sqlite'))).toBe(false);
  });

  it('the receipts export reads the database (test/db/pg-export.test.ts holds it to SQLite byte for byte)', async () => {
    const err = captured();
    // The key the server would have made at its first start.
    loadOrCreateSigningKey(join(dir, 'data'));
    const code = await runExportCli(['--format', 'ndjson', '--from', '2026-01-01T00:00:00Z', '--to', '2026-02-01T00:00:00Z', '--out', join(dir, 'out.ndjson')], env, { stdout: captured(), stderr: err });
    expect(code, err.text()).toBe(EXIT_CODES.ok);
    expect(err.text()).toMatch(/^export: 0 receipts and 0 decisions as ndjson/);
    expect(existsSync(join(dir, 'data', 'interlock.sqlite'))).toBe(false);
  });
});
