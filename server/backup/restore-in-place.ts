import { appendSealedMax } from '../../db/journal-base.ts';
import { MemoryJournal } from '../../db/journal-memory.ts';
import type { Storage } from '../../db/port/storage.ts';
import { openPgToolStorage } from '../../db/server-storage.ts';
import { EPOCH_CHAIN_ID } from '../../shared/entries.ts';
import type { InterlockEnv } from '../config/env.ts';
import { loadConfig } from '../config/load.ts';
import { verifyStorage } from '../integrity/verify-journal.ts';
import { closesDispatch } from '../journal/chain.ts';
import type { JournalStore } from '../journal/store.ts';
import { resolveSigningKey } from '../receipts/key-file.ts';
import type { StripeEndpoint } from '../targets/stripe-refunds.ts';
import { BackupError } from './manifest.ts';
import { type ReconcileEnv, reconcile, type RestorePoint, type RestoreStage, refuseLostSandbox } from './reconcile.ts';
import type { RestoreFindings } from './restore-plan.ts';

// `npm run restore -- --in-place`: the database DATABASE_URL names was restored with PostgreSQL's
// own tools (pg_restore of a pg_dump, or a base backup and its WAL); Interlock's own restore steps
// then run on it, as they run on a SQLite copy of a backup: Stripe is asked what was refunded since
// the newest entry the database holds, each refund it does not know is journaled COMMITTED, and a
// new epoch begins naming them. The restore's entries are stored in one transaction at the end,
// all or none: a restore cut short leaves the database as it was, and running it again does it all.

/** What the restore in place needs of the environment. */
export type InPlaceEnv = ReconcileEnv & Pick<InterlockEnv, 'databaseUrl' | 'configPath' | 'secrets' | 'receiptKeyPath' | 'credentialsDirectory'>;

/** What a restore in place did. */
export interface InPlaceResult {
  /** The database, as an operator names it (no password). */
  location: string;
  /** Where its journal stood before the restore's entries: what Stripe was held against. */
  point: RestorePoint;
  epoch: number;
  findings: RestoreFindings;
}

/** Restore the database of `env.databaseUrl` in place: the Stripe reconciliation and the new epoch, all or nothing. */
export async function restoreInPlace(options: { env: InPlaceEnv; wallMs?: () => number; stripeEndpoint?: StripeEndpoint }): Promise<InPlaceResult> {
  const { env } = options;
  const wallMs = options.wallMs ?? Date.now;
  if (env.databaseUrl === null) {
    throw new BackupError('--in-place runs on the PostgreSQL database DATABASE_URL names, and it is not set: a SQLite journal is restored from a backup folder (npm run restore -- <dir>)');
  }
  const config = loadConfig(env.configPath, env.secrets);
  refuseLostSandbox(env, config);
  const { storage, serversConnected } = await openPgToolStorage({ url: env.databaseUrl, tool: 'restore' });
  try {
    // The key the servers sign with, read and never created: the epoch is signed as they sign.
    const { key } = resolveSigningKey(env, { readOnly: true });
    const servers = await serversConnected();
    if (servers > 0) throw new BackupError(`${servers} connections of Interlock servers are open on ${storage.location}: stop every server before restoring, then start them afterwards`);
    const report = await verifyStorage(storage, storage.location, { publicKeyPem: key.publicKeyPem, keyId: key.keyId });
    if (!report.valid) {
      throw new BackupError(
        `the database fails the check a server makes at start (${report.problem?.code ?? 'journal_damaged'}: ${report.problem?.message ?? 'no detail'}); nothing was changed: restore an earlier backup`,
      );
    }
    const point = await pointOf(storage, wallMs);
    const { epoch, findings } = await reconcile({ storage, config, env, key, point, wallMs, stripeEndpoint: options.stripeEndpoint ?? {}, stage: stageAside });
    return { location: storage.location, point, epoch, findings };
  } finally {
    await storage.close();
  }
}

/**
 * Where the restored journal stands: its head, and as the time of the backup the newest entry's
 * (the database says nothing of when it was dumped; a refund sent after that entry was made after
 * it, and Stripe is asked from a margin before it anyway).
 */
async function pointOf(storage: Storage, wallMs: () => number): Promise<RestorePoint> {
  const journal = storage.journal({ wallClockMs: wallMs });
  const head = await journal.head();
  if (head === null) return { taken_at_ms: 0, entries: 0, last_seq: 0, global_head: null, oldest_open_dispatch_ms: null };
  const [newest] = await journal.scan(head.seq - 1, 1);
  return { taken_at_ms: newest?.entry.ts_ms ?? 0, entries: head.size, last_seq: head.seq, global_head: head.globalHash, oldest_open_dispatch_ms: await oldestOpenDispatchMs(journal) };
}

/** The wall time of the oldest DISPATCHED no entry has closed yet, null for none: its refund may be at Stripe already. */
async function oldestOpenDispatchMs(journal: JournalStore): Promise<number | null> {
  let oldest: number | null = null;
  for (const effectId of await journal.inFlight()) {
    const chain = await journal.entries(effectId);
    const closed = chain.findLastIndex(closesDispatch);
    for (const entry of chain.slice(closed + 1)) {
      if (entry.kind === 'DISPATCHED' && (oldest === null || entry.ts_ms < oldest)) oldest = entry.ts_ms;
    }
  }
  return oldest;
}

/**
 * The restore's entries kept aside: a journal in memory holding the chains they extend (the
 * epochs', and each refund's), written there as on the database, then stored in the database in one
 * transaction (`appendSealed`: every hash and link checked against the chains as stored, all or
 * none). A write to one of those chains meanwhile makes the store refuse them all.
 */
const stageAside: RestoreStage = async (restored, effectIds, wallMs) => {
  const aside = new MemoryJournal({ wallClockMs: wallMs });
  let held = 0;
  for (const effectId of new Set([EPOCH_CHAIN_ID, ...effectIds])) {
    const chain = await restored.entries(effectId);
    if (chain.length === 0) continue;
    await aside.appendSealed(chain);
    held += chain.length;
  }
  return {
    journal: aside,
    commit: async () => {
      const written = await aside.scan(held, appendSealedMax + 1);
      if (written.length > appendSealedMax) throw new BackupError(`the restore would journal more than ${appendSealedMax} entries at once; nothing was changed`);
      if (written.length > 0) await restored.appendSealed(written.map((sequenced) => sequenced.entry));
    },
  };
};
