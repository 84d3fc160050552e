import { chmodSync, copyFileSync, existsSync, mkdirSync, readdirSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { openJournalFile } from '../../db/sqlite-journal-file.ts';
import type { InterlockEnv } from '../config/env.ts';
import { signingKeyLocation } from '../receipts/key-file.ts';
import { BACKUP_FILES, type BackupManifest, BackupError, MANIFEST_FILE, MANIFEST_FORMAT, readBackupPoint, sha256OfFile } from './manifest.ts';

// `npm run backup -- <dir>`: SQLite's online backup of the journal's database, safe while the
// server runs (WAL: the copy is one read transaction, a consistent snapshot, and the server goes on
// writing beside it), with the config, and the receipt key only when asked.

/** Every file of a backup is its owner's only: the journal copy, the config, the key, the manifest. */
export const BACKUP_FILE_MODE = 0o600;

/** What the backup needs of the environment. */
export type BackupEnv = Pick<InterlockEnv, 'dbPath' | 'configPath' | 'dataDir' | 'receiptKeyPath' | 'credentialsDirectory'>;

/** What a backup wrote, and what its operator must hear. */
export interface BackupResult {
  dir: string;
  manifest: BackupManifest;
  warnings: string[];
}

/** The warning a backup with the key prints: whoever holds the folder can sign receipts and start epochs. */
export const KEY_IN_BACKUP_WARNING =
  'the backup holds the receipt signing key: whoever can read it can sign receipts and checkpoints as this Interlock. Keep it apart from the data and encrypted, or back the key up once, by itself, and leave --with-key off';

/**
 * Take a backup into `dir` (new, or empty): the journal's database first, then the config and
 * (with `withKey`) the receipt key, then `manifest.json` last, so a folder with a manifest is a
 * whole backup.
 */
export async function takeBackup(options: { env: BackupEnv; dir: string; withKey: boolean; wallMs?: () => number }): Promise<BackupResult> {
  const { env, dir, withKey } = options;
  const wallMs = options.wallMs ?? Date.now;
  prepareBackupFolder(env, dir);
  const journalCopy = join(dir, BACKUP_FILES.journal);
  const partial = `${journalCopy}.partial`;
  // Made by us first, so SQLite writes into a file only its owner reads.
  writeFileSync(partial, '', { mode: BACKUP_FILE_MODE });
  // One read of one snapshot, the copy left as one file with nothing beside it (no write-ahead log).
  const source = await openJournalFile(env.dbPath, { writable: true });
  try {
    await source.backupTo(partial);
  } finally {
    await source.close();
  }
  renameSync(partial, journalCopy);
  const takenAtMs = wallMs();
  const { copied, warnings } = copyConfigAndKey(env, dir, withKey);
  const files: BackupManifest['files'] = {};
  for (const role of ['journal', ...copied] as const) {
    const path = join(dir, BACKUP_FILES[role]);
    files[role] = { name: BACKUP_FILES[role], sha256: sha256OfFile(path), bytes: statSync(path).size };
  }
  const manifest: BackupManifest = { format: MANIFEST_FORMAT, taken_at_ms: takenAtMs, point: await readBackupPoint(journalCopy), files };
  writeFileSync(join(dir, MANIFEST_FILE), `${JSON.stringify(manifest, null, 2)}\n`, { mode: BACKUP_FILE_MODE });
  return { dir, manifest, warnings };
}

/** Refuse a folder that is not empty and a journal that is not there; make the folder, its owner's only. */
export function prepareBackupFolder(env: Pick<BackupEnv, 'dbPath'>, dir: string): void {
  if (existsSync(dir) && readdirSync(dir).length > 0) throw new BackupError(`${dir} is not empty: a backup goes into a new or empty folder, never over another`);
  if (!existsSync(env.dbPath)) throw new BackupError(`there is no journal at ${env.dbPath} to back up (DB_PATH, or DATA_DIR/interlock.sqlite)`);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  // An empty folder made beforehand (by a script, or by hand) is narrowed as one made here is.
  chmodSync(dir, 0o700);
}

/** Copy the config (when there is one) and, with `withKey`, the receipt key into a backup folder: the roles copied, and the warnings. */
export function copyConfigAndKey(env: BackupEnv, dir: string, withKey: boolean): { copied: ('config' | 'key')[]; warnings: string[] } {
  const copied: ('config' | 'key')[] = [];
  const warnings: string[] = [];
  if (existsSync(env.configPath)) {
    copyFileSync(env.configPath, join(dir, BACKUP_FILES.config));
    chmodSync(join(dir, BACKUP_FILES.config), BACKUP_FILE_MODE);
    copied.push('config');
  } else warnings.push(`the config ${env.configPath} does not exist, so the backup holds none`);
  if (withKey) {
    const { path } = signingKeyLocation(env);
    if (!existsSync(path)) throw new BackupError(`--with-key: there is no receipt key at ${path}`);
    copyFileSync(path, join(dir, BACKUP_FILES.key));
    chmodSync(join(dir, BACKUP_FILES.key), BACKUP_FILE_MODE);
    copied.push('key');
    warnings.push(KEY_IN_BACKUP_WARNING);
  }
  return { copied, warnings };
}
