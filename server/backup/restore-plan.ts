import type { Entry } from '../../shared/entries.ts';
import { has } from '../journal/chain.ts';

// What a restore does with each refund Stripe holds under one of our effect ids, decided from the
// restored journal's chain alone. Pure: the restore command reads Stripe and the journal, asks
// here, and writes what this says.

/** A refund Stripe holds whose metadata names an effect of ours. */
export type RefundAtStripe = {
  effect_id: string;
  refund: string;
  amount: number;
  currency: string;
  payment_intent: string;
  status: string;
  /** Stripe's `created`, unix seconds. */
  created: number;
};

/**
 * - `known`: the restored journal already holds the effect's COMMITTED (it was sent before the backup);
 * - `known_ambiguous`: it holds AMBIGUOUS, which is never sent again and goes to a person as it did;
 * - `commit`: Stripe has a refund the restored journal does not know (sent after the backup, or
 *   sent before it with its COMMITTED written after): it is journaled COMMITTED, found by the
 *   restore's lookup, so the gate answers DUPLICATE_IGNORED and never sends it again.
 */
export type RestoreStep = 'known' | 'known_ambiguous' | 'commit';

/** The step for one refund Stripe holds, from its effect's chain in the restored journal (empty when the backup never saw it). */
export function decideRestoreStep(chain: readonly Entry[]): RestoreStep {
  if (has(chain, 'COMMITTED')) return 'known';
  if (has(chain, 'AMBIGUOUS')) return 'known_ambiguous';
  return 'commit';
}

/** The fields of the COMMITTED a restore writes: recovery's lookup commit (core §4.7 step 8), with nothing rechecked. */
export function restoreCommitFields(refund: RefundAtStripe): { via: 'recovery-query'; rechecked: null; found: string } {
  return { via: 'recovery-query', rechecked: null, found: refund.refund };
}

/** Stripe's word that a refund gave no money back: the restore journals it as its webhook would have. */
const NO_MONEY_BACK: ReadonlySet<string> = new Set(['failed', 'canceled']);

/** Whether a refund the restore commits is also journaled CONFIRMED with its status: when it failed or was canceled. */
export function restoreConfirms(refund: Pick<RefundAtStripe, 'status'>): boolean {
  return NO_MONEY_BACK.has(refund.status);
}

/**
 * One refund per effect: Stripe keeps one refund per idempotency key, so a second one naming the
 * same effect was made by hand with copied metadata; the oldest is the one the gate sent.
 */
export function oneRefundPerEffect(refunds: readonly RefundAtStripe[]): { kept: RefundAtStripe[]; copies: RefundAtStripe[] } {
  const byEffect = new Map<string, RefundAtStripe>();
  const copies: RefundAtStripe[] = [];
  for (const refund of [...refunds].sort((a, b) => a.created - b.created || a.refund.localeCompare(b.refund))) {
    if (byEffect.has(refund.effect_id)) copies.push(refund);
    else byEffect.set(refund.effect_id, refund);
  }
  return { kept: [...byEffect.values()], copies };
}

/** What the epoch's first entry says the restore found (its `stripe` field). */
export type RestoreFindings = {
  /** When Stripe was read (wall ms), and from when its refunds were listed. */
  read_at_ms: number;
  listed_since_ms: number;
  /** The backup the journal was restored from: when it was taken and where the journal stood. */
  backup: { taken_at_ms: number; entries: number; last_seq: number; global_head: string | null };
  /** Refunds listed, and how many of them name an effect of ours. */
  refunds_listed: number;
  refunds_ours: number;
  /** Refunds the restored journal did not know, journaled COMMITTED by the restore. */
  refunds_not_in_backup: RefundAtStripe[];
  /** Refunds whose effect the restored journal holds as AMBIGUOUS: left so, a person sees them. */
  refunds_ambiguous_in_backup: RefundAtStripe[];
  /** Refunds naming an effect another refund already names (copied metadata): not ours to journal. */
  refunds_copied_metadata: RefundAtStripe[];
  /**
   * Receipts issued after the backup still verify offline but no longer match this journal; Stripe
   * names them only by the effect ids of the refunds sent: these. A receipt of a request decided or
   * refused after the backup and never sent is named nowhere.
   */
  receipts_after_backup: string[];
};
