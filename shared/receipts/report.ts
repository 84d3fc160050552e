import { isJsonObject, type Json, type JsonObject } from '../json.ts';
import { canonical } from './canonical.ts';

// What verifying a receipt reports, and the bytes its signature covers. The passes that produce a
// report live in verify.ts; the vocabulary lives here, so a route or a page can show a report
// without the verifier, and the server that signs and the browser that verifies agree on it.

/** The version every receipt signed today carries as `v`; a receipt without `v` is version 1. */
export const RECEIPT_VERSION = 2;
/** The receipt versions the verifier reads: 1 (no `v`: its signature leaves key_id out) and 2. */
export type ReceiptVersion = 1 | typeof RECEIPT_VERSION;

/** Opens every v2 signed message, so a receipt signature can never be replayed as another kind of signature. */
export const RECEIPT_SIGNATURE_CONTEXT = 'interlock-receipt-v2';
/** Opened every v1 signed message; v1 receipts are still verified with it. */
export const LEGACY_RECEIPT_SIGNATURE_CONTEXT = 'interlock-receipt-v1';

/**
 * The bytes a v2 receipt signature covers: the canonical JSON of
 * `["interlock-receipt-v2", 2, effect id, hash of the last entry or null, key id]`. The key id is
 * covered, so a receipt cannot be made to name another key than the one that signed it. The
 * message opens with `["`, so it is never the message of a v1 signature, which opens with a letter.
 */
export function receiptSigningInput(effectId: string, lastHash: string | null, keyId: string): string {
  return canonical([RECEIPT_SIGNATURE_CONTEXT, RECEIPT_VERSION, effectId, lastHash, keyId]);
}

/** The bytes a v1 receipt signature covers: `interlock-receipt-v1:<effect id>:<hash of the last entry, empty when none>`. */
export function legacyReceiptSigningInput(effectId: string, lastHash: string | null): string {
  return `${LEGACY_RECEIPT_SIGNATURE_CONTEXT}:${effectId}:${lastHash ?? ''}`;
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

/** Every problem `verifyReceipt` can report, grouped by the pass that finds it (spec §7). */
export const VERIFY_PROBLEM_CODES = [
  // The receipt or an entry cannot be read as one.
  'malformed_receipt',
  'unsupported_version',
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
  'approvals_short',
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
  unsupported_version:
    'The receipt is of a version this verifier does not read (it reads receipts without v, and v 2), so nothing in it was checked: verify it with the Interlock release that signed it, or a newer one.',
  foreign_entry: 'belongs to another effect.',
  altered_entry: 'was altered: its content no longer matches its hash.',
  chain_break: 'is out of order: it does not link to the entry before it, so an entry was moved or removed.',
  unknown_key: 'No published key matches the key id of the receipt.',
  bad_signature:
    'The signature does not match the effect id, the last entry and the key id: the receipt was rewritten, cut short, given another key id or signed by another key.',
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
  approvals_short: 'is a send of an escalation that needs two approvers without two distinct recorded approvals of it.',
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
  /** Every approver of a send that needed two, the earlier first; absent when one approved it. */
  approvers?: string[];
  approval_verified: boolean | null;
  escalations: EscalationHistoryItem[];
  confirmed_by_target: boolean | 'pending' | null;
  confirmation: ConfirmationItem[];
  problems: VerifyProblem[];
};
