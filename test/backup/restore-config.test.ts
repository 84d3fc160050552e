import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openDatabase } from '../../db/open.ts';
import { takeBackup } from '../../server/backup/backup.ts';
import { restoreBackup } from '../../server/backup/restore.ts';
import { parseEnv } from '../../server/config/env.ts';
import { startSandbox } from '../../server/sandbox/index.ts';
import { loadOrCreateSigningKey } from '../../server/receipts/keys.ts';
import { writeTestConfig } from '../support/server-process.ts';

// A restore onto a machine that has lost its config as well as its journal: the backup's config
// is put where the config is read, its owner's only, and the restore goes on with it.

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe('a restore where no config is', () => {
  it("puts the backup's config there and restores with it", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'interlock-restore-config-'));
    dirs.push(dir);
    const config = writeTestConfig(dir);
    const dataDir = join(dir, 'data');
    const env = parseEnv({ DATA_DIR: dataDir, INTERLOCK_CONFIG: config });
    mkdirSync(dataDir);
    loadOrCreateSigningKey(dataDir);
    openDatabase(env.dbPath).close();
    // The embedded sandbox's file, Stripe's side of the journal, is not lost with the machine's config.
    await (await startSandbox({ file: join(dataDir, 'sandbox.sqlite') })).close();
    const backupDir = join(dir, 'backup');
    await takeBackup({ env, dir: backupDir, withKey: true });
    const written = readFileSync(config, 'utf8');
    // The machine is lost: its config and its journal.
    rmSync(config);
    rmSync(env.dbPath);

    // Under the usual umask: the config (password and token hashes) is kept its owner's only, as the backup kept it.
    const umask = process.umask(0o022);
    let result: Awaited<ReturnType<typeof restoreBackup>>;
    try {
      result = await restoreBackup({ env, dir: backupDir, replace: false });
    } finally {
      process.umask(umask);
    }
    expect(result.epoch).toBe(1);
    expect(readFileSync(config, 'utf8')).toBe(written);
    expect(statSync(config).mode & 0o777).toBe(0o600);
    expect(existsSync(env.dbPath)).toBe(true);
  }, 20_000);
});
