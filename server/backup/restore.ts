import { copyFileSync, existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type Stripe from 'stripe';
import { journalFileInUse } from '../../db/sqlite-journal-file.ts';
import type { Checkpoints } from '../../db/port/checkpoints.ts';
import { openStorage } from '../../db/sqlite-storage.ts';
import { EPOCH_CHAIN_ID } from '../../shared/entries.ts';
import { limits } from '../../shared/limits.ts';
import { loadConfig } from '../config/load.ts';
import type { InterlockConfig } from '../config/schema.ts';
import type { InterlockEnv } from '../config/env.ts';
import { readCheckpoint } from '../integrity/checkpoint.ts';
import { verifyJournalFile } from '../integrity/verify-journal.ts';
import { originOf, startEpoch } from '../integrity/epoch.ts';
import { openMirror } from '../integrity/mirrors.ts';
import type { SigningKey } from '../receipts/keys.ts';
import { startSandbox } from '../sandbox/index.ts';
import { recordConfirmation } from '../confirm/record.ts';
import type { JournalStore } from '../journal/store.ts';
import { budgetFromConfig, stripeAccountOf } from '../app/services.ts';
import { attachBudget } from '../stripe/paced-client.ts';
import { createStripeClient, type StripeEndpoint } from '../targets/stripe-refunds.ts';
import { applyIncrements, newestOf, readChain } from './chain.ts';
import type { AnyManifest } from './increment-manifest.ts';
import { BACKUP_FILES, BackupError } from './manifest.ts';
import { newestWith, placeConfig, placedByRestore, placeKey } from './restore-files.ts';
import { decideRestoreStep, oneRefundPerEffect, type RefundAtStripe, restoreCommitFields, type RestoreFindings, restoreConfirms } from './restore-plan.ts';
import { refundsSince } from './stripe-refunds-since.ts';

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

/**
 * Refunds made this long before the backup point are read too: Stripe's clock and ours may differ,
 * as the gate allows for at the end of a key's window (core §4.7, `dedupMarginMs`).
 */
const LOOKBACK_MS = limits.dedupMarginMs;

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
    result = await reconcile({ file: restoring, config, env, key, manifest, wallMs, stripeEndpoint: options.stripeEndpoint ?? {} });
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

/** Ask Stripe what it holds since the backup point, journal what the backup does not know, and begin the new epoch. */
async function reconcile(parts: {
  file: string;
  config: InterlockConfig;
  env: RestoreEnv;
  key: SigningKey;
  manifest: AnyManifest;
  wallMs: () => number;
  stripeEndpoint: StripeEndpoint;
}): Promise<Omit<RestoreResult, 'replacedTo' | 'warnings' | 'chain'>> {
  const { file, config, env, key, manifest, wallMs } = parts;
  const storage = await openStorage({ file });
  const connection = await connectStripe(env, config, parts.stripeEndpoint);
  const budget = budgetFromConfig(config, { slots: storage.budgetSlots, account: stripeAccountOf(config, connection.sandboxUrl) });
  attachBudget(connection.stripe, budget);
  budget.start();
  try {
    const journal = storage.journal({ wallClockMs: wallMs });
    const store = storage.checkpoints;
    const journalId = (await store.journalId()) ?? (await store.ensureJournalId());
    const epochNow = (await journal.entries(EPOCH_CHAIN_ID)).length;
    const previousNote = await newestCheckpoint(config, store, key, originOf(journalId, epochNow));
    const point = manifest.point;
    const listedSinceMs = Math.min(manifest.taken_at_ms, point.oldest_open_dispatch_ms ?? Number.POSITIVE_INFINITY) - LOOKBACK_MS;
    const { listed, ours } = await refundsSince(connection.stripe, listedSinceMs);
    const readAtMs = wallMs();
    const { kept, copies } = oneRefundPerEffect(ours);
    const toCommit: RefundAtStripe[] = [];
    const ambiguous: RefundAtStripe[] = [];
    for (const refund of kept) {
      const step = decideRestoreStep(await journal.entries(refund.effect_id));
      if (step === 'commit') toCommit.push(refund);
      else if (step === 'known_ambiguous') ambiguous.push(refund);
    }
    const findings: RestoreFindings = {
      read_at_ms: readAtMs,
      listed_since_ms: listedSinceMs,
      backup: { taken_at_ms: manifest.taken_at_ms, entries: point.entries, last_seq: point.last_seq, global_head: point.global_head },
      refunds_listed: listed,
      refunds_ours: ours.length,
      refunds_not_in_backup: toCommit,
      refunds_ambiguous_in_backup: ambiguous,
      refunds_copied_metadata: copies,
      receipts_after_backup: toCommit.map((refund) => refund.effect_id),
    };
    const entry = await startEpoch({ journal, key, journalId, previousNote, stripe: findings, atMs: readAtMs });
    await journalRefundsFound(journal, toCommit);
    return { manifest, epoch: entry.epoch, findings };
  } finally {
    await budget.stop();
    await connection.close();
    await storage.close();
  }
}

/**
 * Journal each refund Stripe holds that the restored journal does not know: COMMITTED, so it is
 * never sent again; and, when Stripe reports it failed or canceled, the CONFIRMED its webhook would
 * have written (by the webhook's own rule, as a lookup), so the item and the ledger do not say
 * money went back that did not. A refund whose send the backup never saw cannot be matched, by a
 * webhook or here: it stays committed only, named by the epoch.
 */
export async function journalRefundsFound(journal: JournalStore, refunds: readonly RefundAtStripe[]): Promise<void> {
  for (const refund of refunds) {
    await journal.appendIf('COMMITTED', refund.effect_id, (chain) => (decideRestoreStep(chain) === 'commit' ? null : 'known'), restoreCommitFields(refund));
    if (!restoreConfirms(refund)) continue;
    const facts = { id: refund.refund, amount: refund.amount, payment_intent: refund.payment_intent, status: refund.status };
    await recordConfirmation(journal, refund.effect_id, facts, { via: 'lookup', event: null, created: refund.created });
  }
}

/**
 * The newest checkpoint of the journal's current epoch that a mirror or the restored store holds:
 * the one the new epoch names, so the journal is held against the old epoch only that far. A
 * mirror that cannot be read stops the restore: the epoch would name less than it holds.
 */
async function newestCheckpoint(config: InterlockConfig, store: Checkpoints, key: SigningKey, origin: string): Promise<string | null> {
  const notes = [(await store.latest())?.note ?? null];
  for (const mirror of config.integrity.mirrors.map(openMirror)) {
    try {
      notes.push(await mirror.latest());
    } catch (error) {
      throw new BackupError(`checkpoint mirror ${mirror.name} could not be read, so the new epoch could not name its newest checkpoint: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  let newest: { note: string; size: number } | null = null;
  for (const note of notes) {
    if (note === null) continue;
    const read = readCheckpoint(note, key);
    if (!read.ok || read.checkpoint.origin !== origin) continue;
    if (newest === null || read.checkpoint.size > newest.size) newest = { note, size: read.checkpoint.size };
  }
  return newest?.note ?? null;
}

/** Where the embedded sandbox keeps Stripe's side of the journal: every payment and refund it made. */
function embeddedSandboxFile(env: Pick<RestoreEnv, 'dataDir'>): string {
  return join(env.dataDir, 'sandbox.sqlite');
}

/**
 * With the embedded sandbox, Stripe is the file the server kept beside the journal. When it is
 * gone (the data folder lost with the journal), a new sandbox would answer that no refund was
 * made after the backup point, which nobody can know: refuse, naming the file.
 */
function refuseLostSandbox(env: RestoreEnv, config: InterlockConfig): void {
  if (config.stripe.mode !== 'sandbox' || env.stripeSandboxUrl !== null) return;
  const file = embeddedSandboxFile(env);
  if (existsSync(file)) return;
  throw new BackupError(
    `the embedded Stripe sandbox's file ${file} is not there: it is Stripe's side of this journal (every payment and refund the sandbox made), never in a backup, so the refunds made after the backup point cannot be known; put the file back and restore again, or start on a new data folder (the sandbox holds no real money)`,
  );
}

/**
 * Stripe as the config reaches it: live mode, test mode, a sandbox elsewhere, or the embedded
 * sandbox's file in the data folder. Live mode is asked with its own key: a sandbox read instead
 * would find none of the refunds sent after the backup, and they could be sent again.
 */
async function connectStripe(
  env: RestoreEnv,
  config: InterlockConfig,
  endpoint: StripeEndpoint,
): Promise<{ stripe: Stripe; sandboxUrl: string | undefined; close(): Promise<void> }> {
  if (config.stripe.mode === 'live') {
    if (env.stripeLiveKey === null) throw new BackupError('STRIPE_LIVE_KEY (or STRIPE_LIVE_KEY_FILE, or the systemd credential stripe-live-key) must be set when the config says stripe.mode: live: the restore asks Stripe what was refunded');
    return { stripe: createStripeClient(env.stripeLiveKey, endpoint, { live: true }), sandboxUrl: undefined, close: async () => {} };
  }
  if (config.stripe.mode === 'test') {
    if (env.stripeSecretKey === null) throw new BackupError('STRIPE_SECRET_KEY (or STRIPE_SECRET_KEY_FILE, or the systemd credential stripe-secret-key) must be set when the config says stripe.mode: test: the restore asks Stripe what was refunded');
    return { stripe: createStripeClient(env.stripeSecretKey, endpoint), sandboxUrl: undefined, close: async () => {} };
  }
  const url = env.stripeSandboxUrl;
  if (url !== null) {
    const stripe = createStripeClient('sk_test_interlock_sandbox', { host: url.hostname, port: Number(url.port || 80), protocol: 'http' });
    return { stripe, sandboxUrl: url.origin, close: async () => {} };
  }
  const sandbox = await startSandbox({ port: 0, file: embeddedSandboxFile(env), rateLimits: env.sandboxRateLimits });
  return { stripe: sandbox.stripe(), sandboxUrl: undefined, close: () => sandbox.close() };
}
