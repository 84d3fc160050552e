import type { HistoryItem, InboxItem, ItemDetail } from '../../shared/api.ts';
import { isJsonObject, type JsonObject } from '../../shared/json.ts';
import { callApi } from './api-client.ts';

/**
 * The currency of each payment this tab has seen. The done and closed lists carry no facts, so
 * their amounts take the currency from here; a payment never seen shows no symbol rather than
 * a guessed one.
 */
const byPaymentIntent = new Map<string, string>();
const STORAGE_KEY = 'interlock:currencies';

try {
  const saved = JSON.parse(sessionStorage.getItem(STORAGE_KEY) ?? '{}') as Record<string, unknown>;
  for (const [pi, currency] of Object.entries(saved)) if (typeof currency === 'string') byPaymentIntent.set(pi, currency);
} catch {
  // A broken or blocked storage only costs the cache.
}

function remember(paymentIntent: string, currency: unknown): void {
  if (typeof currency !== 'string' || byPaymentIntent.get(paymentIntent) === currency) return;
  byPaymentIntent.set(paymentIntent, currency);
  try {
    sessionStorage.setItem(STORAGE_KEY, JSON.stringify(Object.fromEntries(byPaymentIntent)));
  } catch {
    // Storage full or blocked: the in-memory cache still works.
  }
}

/** Note the currency of inbox items. */
export function rememberItems(items: readonly InboxItem[]): void {
  for (const item of items) remember(item.request.payment_intent, item.facts.currency);
}

/** Note the currency of an item page. */
export function rememberDetail(detail: ItemDetail): void {
  remember(detail.request.payment_intent, detail.facts_then.currency ?? detail.facts_now?.currency);
}

/** The currency of a payment, if this tab has seen it. */
export function currencyOf(paymentIntent: string): string | null {
  return byPaymentIntent.get(paymentIntent) ?? null;
}

/** The currency a detail's facts name. */
export function detailCurrency(detail: ItemDetail): string | null {
  const c = detail.facts_then.currency ?? detail.facts_now?.currency ?? detail.item?.facts.currency;
  return typeof c === 'string' ? c : currencyOf(detail.request.payment_intent);
}

/** The currency an inbox item's facts name. */
export function itemCurrency(item: InboxItem): string | null {
  return typeof item.facts.currency === 'string' ? item.facts.currency : currencyOf(item.request.payment_intent);
}

/** Receipts read at once, and at most per list, to learn currencies the lists do not carry. */
const RECEIPT_READS_PARALLEL = 4;
const RECEIPT_READS_MAX = 60;

/**
 * Learn the currency of payments this tab has not seen, from their signed receipts: a journal
 * read on the server, no Stripe call. Resolves with how many were learned.
 */
export async function learnCurrencies(items: readonly HistoryItem[], signal: AbortSignal): Promise<number> {
  const missing = new Map<string, string>();
  for (const item of items) {
    if (!currencyOf(item.request.payment_intent) && !missing.has(item.request.payment_intent)) missing.set(item.request.payment_intent, item.effect_id);
  }
  const queue = [...missing.entries()].slice(0, RECEIPT_READS_MAX);
  let learned = 0;
  const worker = async () => {
    for (let next = queue.shift(); next && !signal.aborted; next = queue.shift()) {
      const [paymentIntent, effectId] = next;
      try {
        const receipt = await callApi<{ entries?: unknown }>('GET', `/api/items/${effectId}/receipt`);
        const entries = Array.isArray(receipt.entries) ? receipt.entries : [];
        const proposal = entries.find((e): e is JsonObject => isJsonObject(e) && e.kind === 'PROPOSED' && isJsonObject(e.premises));
        const premises = proposal && isJsonObject(proposal.premises) ? proposal.premises : null;
        if (premises && typeof premises.currency === 'string') {
          remember(paymentIntent, premises.currency);
          learned += 1;
        }
      } catch {
        // The amount keeps its plain form; nothing is guessed.
      }
    }
  };
  await Promise.all(Array.from({ length: RECEIPT_READS_PARALLEL }, worker));
  return learned;
}
