import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { SqliteGrants } from '../../db/grants.ts';
import { SqliteJournal } from '../../db/journal-store.ts';
import { openDatabase } from '../../db/open.ts';
import type { Json } from '../../shared/json.ts';
import { Gate } from '../../server/gate/gate.ts';
import type { KillHook } from '../../server/gate/kill-points.ts';
import { loadOrCreateSigningKey } from '../../server/receipts/keys.ts';
import { signReceipt } from '../../server/receipts/receipts.ts';
import { createStripeClient, StripeRefunds } from '../../server/targets/stripe-refunds.ts';

/** Entries read per page when listing the journal's effects. */
const scanPageEntries = 500;
/** Pages read at most: far beyond any crash test's journal. */
const scanPagesMax = 1_000;

/** Any test-mode key opens the sandbox; importing its own constant would load the whole sandbox into the child. */
const sandboxKey = 'sk_test_interlock_crash';

/** One Interlock over a journal file and the sandbox at a URL: what a (re)started process opens. */
export interface CrashInterlock {
  gate: Gate;
  journal: SqliteJournal;
  grants: SqliteGrants;
  target: StripeRefunds;
  /** The folder of the journal file, where the receipt key and receipts live. */
  dataDir: string;
  close(): void;
}

/** Open the journal file, its grants and the Stripe target, on the real wall clock. */
export function openCrashInterlock(options: { dbFile: string; sandboxUrl: string; claimTtlMs: number; killHook?: KillHook }): CrashInterlock {
  const opened = openDatabase(options.dbFile);
  const wallClockMs = () => Date.now();
  const journal = new SqliteJournal({ db: opened.db, wallClockMs });
  const grants = new SqliteGrants({ db: opened.db, nowMs: wallClockMs });
  const url = new URL(options.sandboxUrl);
  const target = new StripeRefunds(createStripeClient(sandboxKey, { host: url.hostname, port: Number(url.port), protocol: 'http' }));
  const gate = new Gate({
    journal,
    target,
    leases: grants,
    wallClockMs,
    claimTtlMs: options.claimTtlMs,
    ...(options.killHook ? { killHook: options.killHook } : {}),
  });
  return { gate, journal, grants, target, dataDir: path.dirname(options.dbFile), close: () => opened.close() };
}

/** Read the facts now and submit a refund of `amountCents` on `pi`; an unknown outcome is reported, not thrown. */
export async function submitRefund(
  interlock: CrashInterlock,
  request: { pi: string; amountCents: number; requestKey: string; leaseId: string },
): Promise<{ effectId: string; status?: string; error?: string }> {
  const premises = (await interlock.target.capture(request.pi)) as Json;
  const proposal = {
    agent: 'crash-test',
    lease: request.leaseId,
    requestKey: request.requestKey,
    premises,
    effect: { payment_intent: request.pi, amount: request.amountCents },
  };
  const effectId = interlock.gate.effectIdOf(proposal);
  try {
    return await interlock.gate.submit(proposal);
  } catch (error) {
    // An unknown outcome: the dispatch stays open for recovery.
    return { effectId, error: (error as Error).message };
  }
}

/** Every effect id in the journal, in the order first seen. */
export async function journalEffectIds(journal: SqliteJournal): Promise<string[]> {
  const ids = new Set<string>();
  let afterSeq = 0;
  for (let page = 0; page < scanPagesMax; page++) {
    const rows = await journal.scan(afterSeq, scanPageEntries);
    if (rows.length === 0) return [...ids];
    for (const { seq, entry } of rows) {
      ids.add(entry.effect_id);
      afterSeq = seq;
    }
  }
  throw new Error(`more than ${scanPagesMax * scanPageEntries} journal entries`);
}

/** Write each effect's signed receipt next to the journal as receipt-<effectId>.json. */
export async function writeReceipts(interlock: CrashInterlock): Promise<void> {
  const key = loadOrCreateSigningKey(interlock.dataDir);
  for (const effectId of await journalEffectIds(interlock.journal)) {
    const receipt = signReceipt(effectId, await interlock.journal.entries(effectId), key);
    writeFileSync(path.join(interlock.dataDir, `receipt-${effectId}.json`), `${JSON.stringify(receipt, null, 2)}\n`);
  }
}
