import { sign } from 'node:crypto';
import type { Entry, EntryKind } from '../../shared/entries.ts';
import { isJsonObject, type Json, type JsonObject } from '../../shared/json.ts';
import type { SigningKey } from './keys.ts';

/** What a receipt summary says about one effect (spec §2.4), derived from its entries alone. */
export interface ReceiptSummary {
  effect_id: string | null;
  proposed: boolean;
  authorized: boolean;
  /** True once committed; 'unknown' while a send is open or after an ambiguous outcome. */
  executed: boolean | 'unknown';
  recorded: boolean;
  /** COMMITTED, else AMBIGUOUS, else the kind of the last entry, else null. */
  final: EntryKind | null;
  /** The lease of the last DISPATCHED, else of the first AUTHORIZED, else null. */
  authority: Json;
}

/** An effect's whole chain with an Ed25519 signature over its effect id and last hash. */
export interface SignedReceipt {
  effect_id: string;
  entries: Entry[];
  /** base64url Ed25519 signature over `receiptSigningInput(effect_id, hash of the last entry)`. */
  signature: string;
  key_id: string;
}

/** Prefixes every signed message, so a receipt signature can never be replayed as another kind of signature. */
export const RECEIPT_SIGNATURE_CONTEXT = 'interlock-receipt-v1';

/** The bytes a receipt signature covers: the effect id and the hash of its last entry (empty when none). */
export function receiptSigningInput(effectId: string, lastHash: string | null): string {
  return `${RECEIPT_SIGNATURE_CONTEXT}:${effectId}:${lastHash ?? ''}`;
}

/** Sign an effect's chain with the receipt key. The chain must be one effect's entries, in order. */
export function signReceipt(effectId: string, entries: readonly Entry[], key: SigningKey): SignedReceipt {
  for (const entry of entries) {
    // The caller reads one effect's chain; an entry of another effect here is our bug, not the world's.
    if (entry.effect_id !== effectId) throw new Error(`signReceipt: entry of ${entry.effect_id} in receipt of ${effectId}`);
  }
  const message = receiptSigningInput(effectId, entries.at(-1)?.hash ?? null);
  const signature = sign(null, Buffer.from(message, 'utf8'), key.privateKey).toString('base64url');
  return { effect_id: effectId, entries: [...entries], signature, key_id: key.keyId };
}

/**
 * True while a send is unresolved (spec §2.4 open_dispatch): DISPATCHED opens it; COMMITTED,
 * AMBIGUOUS or a REFUSED with `resolves: true` closes it. CONFIRMED never closes a dispatch.
 */
function isDispatchOpen(entries: readonly Entry[]): boolean {
  let open = false;
  for (const entry of entries) {
    if (entry.kind === 'DISPATCHED') open = true;
    else if (entry.kind === 'COMMITTED' || entry.kind === 'AMBIGUOUS') open = false;
    else if (entry.kind === 'REFUSED' && entry.resolves === true) open = false;
  }
  return open;
}

/** The receipt summary of one effect (spec §2.4). */
export function summarize(entries: readonly Entry[], effectId?: string): ReceiptSummary {
  const has = (kind: EntryKind) => entries.some((entry) => entry.kind === kind);
  const committed = has('COMMITTED');
  const ambiguous = has('AMBIGUOUS');
  const lastDispatched = entries.findLast((entry) => entry.kind === 'DISPATCHED');
  const firstAuthorized = entries.find((entry) => entry.kind === 'AUTHORIZED');
  const authoritySource = lastDispatched ?? firstAuthorized;
  let final: EntryKind | null = entries.at(-1)?.kind ?? null;
  if (ambiguous) final = 'AMBIGUOUS';
  if (committed) final = 'COMMITTED';
  return {
    effect_id: effectId ?? entries[0]?.effect_id ?? null,
    proposed: has('PROPOSED'),
    authorized: has('AUTHORIZED'),
    executed: committed ? true : ambiguous || isDispatchOpen(entries) ? 'unknown' : false,
    recorded: committed,
    final,
    authority: authoritySource?.lease ?? null,
  };
}

/**
 * The refund id the first COMMITTED recorded (spec §6.1 sent_refund): `result.refund` when the
 * send returned a result, else the id a lookup `found`, else null.
 */
export function sentRefund(entries: readonly JsonObject[]): string | null {
  const commit = entries.find((entry) => entry.kind === 'COMMITTED');
  if (commit === undefined) return null;
  if (isJsonObject(commit.result)) return typeof commit.result.refund === 'string' ? commit.result.refund : null;
  return typeof commit.found === 'string' ? commit.found : null;
}

// What verifying a receipt reports. The passes that produce it live in verify.ts; the vocabulary
// lives here, next to the receipt, so a route or a page can show a report without the verifier.

/** Every problem `verifyReceipt` can report, grouped by the pass that finds it (spec §7). */
export const VERIFY_PROBLEM_CODES = [
  // The receipt or an entry cannot be read as one.
  'malformed_receipt',
  // Chain pass (§7.1) and signature (§7.2).
  'foreign_entry',
  'altered_entry',
  'chain_break',
  'unknown_key',
  'bad_signature',
  // Shape (§7.3).
  'empty_receipt',
  'no_initial_proposal',
  // Send pass (§7.4).
  'send_while_open',
  'send_without_authorization',
  'send_after_target_failure',
  'orphan_commit',
  // People pass (§7.5).
  'decision_not_for_latest',
  'decider_not_routed',
  'decided_twice',
  'sent_after_close',
  'sent_without_decision',
  'decision_mismatch',
  'facts_not_seen_by_approver',
  'cites_missing_escalation',
  // Confirmation pass (§7.6).
  'confirmation_without_send',
  'confirmed_amount_mismatch',
  'confirmed_other_refund',
  'confirmed_multiple_refunds',
  'confirmed_never_landed',
  // Claims (§7.7).
  'multiple_commits',
  'lease_not_attested',
  'premises_not_attested',
] as const;
/** One stable problem code. */
export type VerifyProblemCode = (typeof VERIFY_PROBLEM_CODES)[number];

/**
 * The plain sentence for each problem. A problem about one entry reads after "Entry <i> (<KIND>)";
 * the others are whole sentences, and a few carry a more specific sentence where they are found.
 */
export const VERIFY_PROBLEM_MESSAGES: Readonly<Record<VerifyProblemCode, string>> = {
  malformed_receipt: 'lacks a string kind, a string hash or a prev link, so it cannot be checked.',
  foreign_entry: 'belongs to another effect.',
  altered_entry: 'was altered: its content no longer matches its hash.',
  chain_break: 'is out of order: it does not link to the entry before it, so an entry was moved or removed.',
  unknown_key: 'No published key matches the key id of the receipt.',
  bad_signature:
    'The signature does not match the effect id and the last entry: the receipt was rewritten, cut short or signed by another key.',
  empty_receipt: 'The receipt has no entries.',
  no_initial_proposal: 'is not a PROPOSED entry, so the receipt does not start at the proposal.',
  send_while_open: 'is a send while an earlier send was still unresolved.',
  send_without_authorization: 'is a send with no AUTHORIZED entry before it.',
  send_after_target_failure: 'is a send after the target reported a failure, with no escalation to a person in between.',
  orphan_commit: 'commits with no open send before it.',
  decision_not_for_latest: 'decides an escalation that is not the latest one before it.',
  decider_not_routed: 'was decided by someone outside the group the escalation was routed to.',
  decided_twice: 'decides an escalation that was already decided.',
  sent_after_close: 'is a send after a person rejected or repaired the effect.',
  sent_without_decision: "is a send after an escalation without a person's approval of the latest escalation.",
  decision_mismatch: 'is a send whose approval does not match the recorded decision on the latest escalation.',
  facts_not_seen_by_approver: 'was sent on facts other than the ones the approver saw.',
  cites_missing_escalation: 'cites an escalation that is not in the receipt.',
  confirmation_without_send: 'confirms a refund before anything was sent.',
  confirmed_amount_mismatch: 'confirms an amount other than the one sent.',
  confirmed_other_refund: 'confirms a refund other than the one the commit recorded.',
  confirmed_multiple_refunds: 'The target confirmed more than one refund for one effect.',
  confirmed_never_landed: 'The target confirmed a refund succeeded, but every send was refused and none landed.',
  multiple_commits: 'The receipt commits the effect more than once.',
  lease_not_attested: 'is a send whose recorded checks do not show live authority covering it.',
  premises_not_attested: 'is a send whose recorded checks do not show that every premise held.',
};

/** One thing wrong with a receipt: a stable code, the entry it is about (if any), and a plain sentence. */
export type VerifyProblem = {
  code: VerifyProblemCode;
  entry?: number;
  kind?: string;
  message: string;
};

/** One escalation as the receipt shows it, with the first decision on it. */
export type EscalationHistoryItem = {
  at_ms: Json;
  reason: Json;
  group: Json;
  routed_to: Json;
  level: Json;
  breach: Json;
  changes: Json;
  /** How many repairs were suggested. */
  repairs: number;
  decision: { by: Json; decision: Json; at_ms: Json } | null;
};

/** One confirmation from the target, as recorded. */
export type ConfirmationItem = {
  via: Json;
  event: Json;
  refund: Json;
  status: Json;
};

/**
 * What `verifyReceipt` re-derives from a receipt's entries alone (spec §7), plus the key it was
 * checked with. It and its parts are type aliases, not interfaces, so a report is a JsonObject as
 * it stands (the item page carries it) with no cast.
 */
export type VerifyReport = {
  effect_id: string | null;
  key_id: string | null;
  valid: boolean;
  tamper_evident: boolean;
  /** null when no key was given: then dropping entries off the end cannot be detected. */
  signed: boolean | null;
  happened: boolean | 'unknown';
  happened_once: boolean;
  authorized_when_fired: boolean | null;
  assumptions_held: boolean | null;
  refused: Json;
  evidence: Json;
  rechecked_at_recovery: Json;
  approved_by: string | null;
  approval_verified: boolean | null;
  escalations: EscalationHistoryItem[];
  confirmed_by_target: boolean | 'pending' | null;
  confirmation: ConfirmationItem[];
  problems: VerifyProblem[];
};
