import { copyFileSync, existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { journalFileInUse } from '../../db/sqlite-journal-file.ts';
import { openStorage } from '../../db/sqlite-storage.ts';
import { loadConfig } from '../config/load.ts';
import type { InterlockEnv } from '../config/env.ts';
import { verifyJournalFile } from '../integrity/verify-journal.ts';
import type { SigningKey } from '../receipts/keys.ts';
import type { StripeEndpoint } from '../targets/stripe-refunds.ts';
import { applyIncrements, newestOf, readChain } from './chain.ts';
import type { AnyManifest } from './increment-manifest.ts';
import { BACKUP_FILES, BackupError } from './manifest.ts';
import { reconcile, refuseLostSandbox } from './reconcile.ts';
import { newestWith, placeConfig, placedByRestore, placeKey } from './restore-files.ts';
import type { RestoreFindings } from './restore-plan.ts';

export { journalRefundsFound } from './reconcile.ts';

// `npm run restore -- <dir>`: put a backup back as the data folder's journal, then, before anything
// serves it, ask Stripe what was refunded since the backup point: each refund the backup does not
// know is journaled COMMITTED (so it is never sent again), and a new epoch begins, naming what was
// found. Everything happens on a copy beside the journal, renamed into place only at the end, so a
// restore cut short leaves nothing a server would start on.

/** What the restore needs of the environment. */
export type RestoreEnv = Pick<
  InterlockEnv,
  'dbPath' | 'dataDir' | 'configPath' | 'receiptKeyPath' | 'credentialsDirectory' | 'secrets' | 'stripeSecretKey' | 'stripeLiveKey' | 'stripeSandboxUrl' | 'sandboxRateLimits'
>;

/** What a restore did. */
export interface RestoreResult {
  /** The newest backup of the chain restored (the full backup when it is alone). */
  manifest: AnyManifest;
  /** The backups restored, oldest first: a full backup, then its increments. */
  chain: string[];
  epoch: number;
  findings: RestoreFindings;
  /** Where the journal it replaced was put, null when there was none. */
  replacedTo: string | null;
  warnings: string[];
}

/** What a restore loses, said by the command and the docs alike. */
export const RESTORE_LOSES = [
  'Requests queued, decided or rejected after the backup point are not in the restored journal: their agents ask again, and a person decides again.',
  'Refunds sent after the backup point are known again from Stripe (journaled as committed, never sent twice).',
  'Receipts issued after the backup still verify offline, but no longer match the restored journal; the new epoch names their effect ids.',
] as const;

/** Restore the backup in `dir` into the configured data folder; `replace` lets it put aside a journal already there. */
export async function restoreBackup(options: {
  env: RestoreEnv;
  dir: string;
  replace: boolean;
  wallMs?: () => number;
  /** Where Stripe test or live mode is: a test points it at the sandbox answering as that mode would; the command gives nothing (api.stripe.com). */
  stripeEndpoint?: StripeEndpoint;
}): Promise<RestoreResult> {
  const { env, dir, replace } = options;
  const wallMs = options.wallMs ?? Date.now;
  const chain = readChain(dir);
  const manifest = newestOf(chain);
  // The newest config and key the chain holds are the ones it is restored with.
  const withConfig = newestWith(chain, 'config');
  // Where no config is, the backup's is the one the restore puts there (placeConfig): read that one.
  const configInBackup = withConfig?.manifest.files.config;
  const configPath = existsSync(env.configPath) || withConfig === null || configInBackup === undefined ? env.configPath : join(withConfig.dir, configInBackup.name);
  const config = loadConfig(configPath, env.secrets);
  // Before anything is placed: a Stripe whose refunds cannot be read makes the restore refuse, not find nothing.
  refuseLostSandbox(env, config);
  const warnings: string[] = [];
  if (existsSync(env.dbPath)) {
    if (!replace) throw new BackupError(`${env.dbPath} already holds a journal: restoring over it loses everything written since the backup; say --replace to put it aside and restore`);
    await refuseWhileOpen(env.dbPath);
  }
  mkdirSync(dirname(env.dbPath), { recursive: true });
  const restoring = `${env.dbPath}.restoring`;
  removeDatabaseFiles(restoring);
  copyFileSync(join(chain.full.dir, BACKUP_FILES.journal), restoring);
  let result: Omit<RestoreResult, 'replacedTo' | 'warnings' | 'chain'>;
  const placed = placedByRestore(env);
  try {
    // The increments are laid on the copy before the key or the config is put in place: a link
    // that does not continue the one before it leaves nothing behind.
    await applyIncrements(restoring, chain);
    const key = placeKey(env, newestWith(chain, 'key'));
    placeConfig(env, withConfig, warnings);
    const named = chain.increments.length === 0 ? join(dir, BACKUP_FILES.journal) : `the chain ending at ${dir}`;
    await refuseDamaged(restoring, key, named);
    const storage = await openStorage({ file: restoring });
    try {
      const reconciled = await reconcile({ storage, config, env, key, point: { ...manifest.point, taken_at_ms: manifest.taken_at_ms }, wallMs, stripeEndpoint: options.stripeEndpoint ?? {} });
      result = { ...reconciled, manifest };
    } finally {
      await storage.close();
    }
  } catch (error) {
    removeDatabaseFiles(restoring);
    // Refused or failed: the key and config it placed go too, as "nothing restored" says.
    placed.undo();
    throw error;
  }
  let replacedTo: string | null = null;
  if (existsSync(env.dbPath)) {
    // Checked again just before the swap: a server started meanwhile would write on a file that is going.
    await refuseWhileOpen(env.dbPath);
    replacedTo = `${env.dbPath}.before-restore-${wallMs()}`;
    renameSync(env.dbPath, replacedTo);
  }
  // A write-ahead log or its index left beside the old file would be read as the restored one's.
  for (const suffix of ['-wal', '-shm']) rmSync(`${env.dbPath}${suffix}`, { force: true });
  renameSync(restoring, env.dbPath);
  return { ...result, replacedTo, warnings, chain: [chain.full.dir, ...chain.increments.map((link) => link.dir)] };
}

/**
 * The check a server makes at start, made on the copy before anything is written to it: a backup
 * whose journal fails it (an entry changed, a guard removed, a checkpoint it falls short of) would
 * be put in place and signed a new epoch, and then no server would start on it.
 */
async function refuseDamaged(copy: string, key: SigningKey, backupFile: string): Promise<void> {
  const report = await verifyJournalFile(copy, { publicKeyPem: key.publicKeyPem, keyId: key.keyId });
  if (report.valid) return;
  // The copy is the backup's file byte for byte, and is removed: the message names the backup's.
  const problem = (report.problem?.message ?? 'no detail').replaceAll(copy, backupFile);
  throw new BackupError(`the backup's journal fails the check a server makes at start (${report.problem?.code ?? 'journal_damaged'}: ${problem}); nothing was restored: restore an earlier backup`);
}

/** Refuse while any process holds the database open (a server, a backup): an exclusive lock is refused then. */
async function refuseWhileOpen(file: string): Promise<void> {
  if (await journalFileInUse(file)) throw new BackupError(`${file} is open in another process (a running server?): stop it before restoring`);
}

/** Remove a database file and its write-ahead log and index. */
function removeDatabaseFiles(file: string): void {
  for (const suffix of ['', '-wal', '-shm']) rmSync(`${file}${suffix}`, { force: true });
}

