import { isJsonObject } from '../../shared/json.ts';
import type { Entry } from '../../shared/entries.ts';
import { limits } from '../../shared/limits.ts';
import { refundOf } from '../inbox/summary.ts';
import type { JournalStore } from '../journal/store.ts';

/** One refund request as the journal has it: what was bound, and whether and when it was COMMITTED. */
export interface JournalRefund {
  effectId: string;
  paymentIntent: string;
  requestId: string | null;
  agent: string | null;
  /** The amount bound at the first PROPOSED: what Interlock sends, and nothing else. */
  amountCents: number;
  /** The payment's currency from the facts a dispatch was checked on; null before any dispatch. */
  currency: string | null;
  /** The first COMMITTED: the refund id it names (null when it names none) and its wall-clock time. */
  committed: { refundId: string | null; atMs: number } | null;
}

/** What the journal says for a reconciliation: every refund request, and the payments they name. */
export interface JournalSide {
  /** By effect id. */
  refunds: Map<string, JournalRefund>;
  /** Effect ids by payment intent, in the order first seen. */
  byPaymentIntent: Map<string, string[]>;
}

export function emptyJournalSide(): JournalSide {
  return { refunds: new Map(), byPaymentIntent: new Map() };
}

/** Fold one entry into the journal side (message chains and anything else not about a refund are passed over). */
export function foldJournalEntry(side: JournalSide, entry: Entry): void {
  if (entry.kind === 'PROPOSED') {
    if (side.refunds.has(entry.effect_id)) return;
    const { payment_intent: paymentIntent, amount } = entry.effect;
    if (typeof paymentIntent !== 'string' || typeof amount !== 'number') return;
    const request = isJsonObject(entry.request) ? entry.request : null;
    side.refunds.set(entry.effect_id, {
      effectId: entry.effect_id,
      paymentIntent,
      requestId: typeof request?.id === 'string' ? request.id : null,
      // The PROPOSED is the inbox's; the agent that asked is named in the request it binds.
      agent: typeof request?.agent === 'string' ? request.agent : null,
      amountCents: amount,
      currency: null,
      committed: null,
    });
    const effects = side.byPaymentIntent.get(paymentIntent);
    if (effects === undefined) side.byPaymentIntent.set(paymentIntent, [entry.effect_id]);
    else effects.push(entry.effect_id);
    return;
  }
  const refund = side.refunds.get(entry.effect_id);
  if (refund === undefined) return;
  if (entry.kind === 'DISPATCHED' && refund.currency === null && isJsonObject(entry.premises) && typeof entry.premises.currency === 'string') {
    refund.currency = entry.premises.currency;
  }
  if (entry.kind === 'COMMITTED' && refund.committed === null) refund.committed = { refundId: refundOf(entry), atMs: entry.ts_ms };
}

/** Read the whole journal into a journal side, a batch at a time. */
export async function readJournalSide(journal: Pick<JournalStore, 'scan'>): Promise<JournalSide> {
  const side = emptyJournalSide();
  let afterSeq = 0;
  for (;;) {
    const batch = await journal.scan(afterSeq, limits.reconcileScanBatch);
    for (const { entry } of batch) foldJournalEntry(side, entry);
    if (batch.length < limits.reconcileScanBatch) return side;
    afterSeq = batch.at(-1)!.seq;
  }
}
