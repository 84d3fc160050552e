import type { InboxItem, ItemDetail } from '../../shared/api.ts';

/**
 * The currency of each payment this tab has seen, for an item whose own facts do not name it yet;
 * a payment never seen shows no symbol rather than a guessed one. (The done and closed lists carry
 * the currency the ledger has.)
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

