import { sign } from 'node:crypto';
import type { Entry, EntryKind } from '../../shared/entries.ts';
import type { Json } from '../../shared/json.ts';
import { RECEIPT_VERSION, receiptSigningInput } from '../../shared/receipts/report.ts';
import type { SigningKey } from './keys.ts';

// The report's vocabulary and the signed bytes are shared with the browser's verifier; they are
// re-exported here for the server's callers, which read them next to the receipt.
export {
  type ConfirmationItem,
  type EscalationHistoryItem,
  LEGACY_RECEIPT_SIGNATURE_CONTEXT,
  legacyReceiptSigningInput,
  RECEIPT_SIGNATURE_CONTEXT,
  RECEIPT_VERSION,
  type ReceiptVersion,
  receiptSigningInput,
  sentRefund,
  VERIFY_PROBLEM_CODES,
  VERIFY_PROBLEM_MESSAGES,
  type VerifyProblem,
  type VerifyProblemCode,
  type VerifyReport,
} from '../../shared/receipts/report.ts';

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

/** An effect's whole chain with an Ed25519 signature over its effect id, last hash and key id. */
export interface SignedReceipt {
  /** The receipt's version, which says what its signature covers. */
  v: typeof RECEIPT_VERSION;
  effect_id: string;
  entries: Entry[];
  /** base64url Ed25519 signature over `receiptSigningInput(effect_id, hash of the last entry, key_id)`. */
  signature: string;
  key_id: string;
}

/** Sign an effect's chain with the receipt key. The chain must be one effect's entries, in order. */
export function signReceipt(effectId: string, entries: readonly Entry[], key: SigningKey): SignedReceipt {
  for (const entry of entries) {
    // The caller reads one effect's chain; an entry of another effect here is our bug, not the world's.
    if (entry.effect_id !== effectId) throw new Error(`signReceipt: entry of ${entry.effect_id} in receipt of ${effectId}`);
  }
  const message = receiptSigningInput(effectId, entries.at(-1)?.hash ?? null, key.keyId);
  const signature = sign(null, Buffer.from(message, 'utf8'), key.privateKey).toString('base64url');
  return { v: RECEIPT_VERSION, effect_id: effectId, entries: [...entries], signature, key_id: key.keyId };
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
