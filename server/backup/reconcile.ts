import { join } from 'node:path';
import { existsSync } from 'node:fs';
import type Stripe from 'stripe';
import type { Checkpoints } from '../../db/port/checkpoints.ts';
import type { StorageJournal } from '../../db/port/journal.ts';
import type { Storage } from '../../db/port/storage.ts';
import { EPOCH_CHAIN_ID } from '../../shared/entries.ts';
import { limits } from '../../shared/limits.ts';
import type { InterlockConfig } from '../config/schema.ts';
import type { InterlockEnv } from '../config/env.ts';
import { readCheckpoint } from '../integrity/checkpoint.ts';
import { originOf, startEpoch } from '../integrity/epoch.ts';
import { openMirror } from '../integrity/mirrors.ts';
import type { SigningKey } from '../receipts/keys.ts';
import { startSandbox } from '../sandbox/index.ts';
import { recordConfirmation } from '../confirm/record.ts';
import type { JournalStore } from '../journal/store.ts';
import { budgetFromConfig, stripeAccountOf } from '../app/services.ts';
import { attachBudget } from '../stripe/paced-client.ts';
import { createStripeClient, type StripeEndpoint } from '../targets/stripe-refunds.ts';
import { BackupError } from './manifest.ts';
import { decideRestoreStep, oneRefundPerEffect, type RefundAtStripe, restoreCommitFields, type RestoreFindings, restoreConfirms } from './restore-plan.ts';
import { refundsSince } from './stripe-refunds-since.ts';

// What every restore does once the journal is back, before anything serves it: ask Stripe what was
// refunded since the backup point, journal each refund the restored journal does not know as
// COMMITTED (so it is never sent again), and begin a new epoch naming what was found. A backup
// folder restored over a SQLite file (restore.ts) and a PostgreSQL database restored with its own
// tools (restore-in-place.ts) both end here.

/** What the reconciliation needs of the environment: where Stripe is, and the data folder (the embedded sandbox's file). */
export type ReconcileEnv = Pick<InterlockEnv, 'dataDir' | 'stripeSecretKey' | 'stripeLiveKey' | 'stripeSandboxUrl' | 'sandboxRateLimits'>;

/**
 * Refunds made this long before the backup point are read too: Stripe's clock and ours may differ,
 * as the gate allows for at the end of a key's window (core §4.7, `dedupMarginMs`).
 */
const LOOKBACK_MS = limits.dedupMarginMs;

/** Where the journal stood at the backup point, as a backup's manifest records it (`point`). */
export interface RestorePoint {
  taken_at_ms: number;
  entries: number;
  last_seq: number;
  global_head: string | null;
  /** The wall time of the oldest DISPATCHED no entry had closed yet, null for none. */
  oldest_open_dispatch_ms: number | null;
}

/**
 * Where a restore's entries are written: `journal` holds the chains of `effectIds` and the
 * epochs' chain as the restored journal does, and takes the restore's entries; `commit` then
 * stores them. On a copy of a file, the journal is the copy's own and `commit` does nothing (the
 * copy is renamed into place only at the end); on a database restored in place, the entries are
 * kept aside and stored in one transaction, all or none.
 */
export type RestoreStage = (journal: StorageJournal, effectIds: readonly string[], wallMs: () => number) => Promise<{ journal: JournalStore; commit(): Promise<void> }>;

/** The journal itself, committed as each entry is written. */
const directly: RestoreStage = async (journal) => ({ journal, commit: async () => {} });

/**
 * Ask Stripe what it holds since the backup point, journal what the restored journal does not
 * know, and begin the new epoch naming it: the restore's own steps, on a copy of a backup file or
 * on a database restored with PostgreSQL's tools.
 */
export async function reconcile(parts: {
  storage: Storage;
  config: InterlockConfig;
  env: ReconcileEnv;
  key: SigningKey;
  point: RestorePoint;
  wallMs: () => number;
  stripeEndpoint: StripeEndpoint;
  stage?: RestoreStage;
}): Promise<{ epoch: number; findings: RestoreFindings }> {
  const { storage, config, env, key, point, wallMs } = parts;
  const connection = await connectStripe(env, config, parts.stripeEndpoint);
  const budget = budgetFromConfig(config, { slots: storage.budgetSlots, account: stripeAccountOf(config, connection.sandboxUrl) });
  attachBudget(connection.stripe, budget);
  budget.start();
  try {
    const restored = storage.journal({ wallClockMs: wallMs });
    const store = storage.checkpoints;
    const journalId = (await store.journalId()) ?? (await store.ensureJournalId());
    const epochNow = (await restored.entries(EPOCH_CHAIN_ID)).length;
    const previousNote = await newestCheckpoint(config, store, key, originOf(journalId, epochNow));
    const listedSinceMs = Math.min(point.taken_at_ms, point.oldest_open_dispatch_ms ?? Number.POSITIVE_INFINITY) - LOOKBACK_MS;
    const { listed, ours } = await refundsSince(connection.stripe, listedSinceMs);
    const readAtMs = wallMs();
    const { kept, copies } = oneRefundPerEffect(ours);
    const staged = await (parts.stage ?? directly)(restored, kept.map((refund) => refund.effect_id), wallMs);
    const journal = staged.journal;
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
      backup: { taken_at_ms: point.taken_at_ms, entries: point.entries, last_seq: point.last_seq, global_head: point.global_head },
      refunds_listed: listed,
      refunds_ours: ours.length,
      refunds_not_in_backup: toCommit,
      refunds_ambiguous_in_backup: ambiguous,
      refunds_copied_metadata: copies,
      receipts_after_backup: toCommit.map((refund) => refund.effect_id),
    };
    const entry = await startEpoch({ journal, key, journalId, previousNote, stripe: findings, atMs: readAtMs });
    await journalRefundsFound(journal, toCommit);
    await staged.commit();
    return { epoch: entry.epoch, findings };
  } finally {
    await budget.stop();
    await connection.close();
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
function embeddedSandboxFile(env: Pick<ReconcileEnv, 'dataDir'>): string {
  return join(env.dataDir, 'sandbox.sqlite');
}

/**
 * With the embedded sandbox, Stripe is the file the server kept beside the journal. When it is
 * gone (the data folder lost with the journal), a new sandbox would answer that no refund was
 * made after the backup point, which nobody can know: refuse, naming the file.
 */
export function refuseLostSandbox(env: ReconcileEnv, config: InterlockConfig): void {
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
  env: ReconcileEnv,
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
