import type { InboxItem } from '../../shared/api.ts';
import { decimalOf, minorOf } from '../../shared/money.ts';
import { itemCurrency } from './currency.ts';
import { formatMoney, toMajorUnits } from './format.ts';
import { needsMyApproval } from './next-item.ts';
import { TROUBLE_KINDS, type TroubleKind, troublesOf } from './trouble.ts';

// The inbox's filters and order, kept in the address bar (`/?agent=support-bot&trouble=disputed`)
// so a link shares them, a reload keeps them and the back button undoes them. Pure: the page
// reads the query, these functions say which items it keeps and in what order.

/** The orders the inbox can be read in; the first is the queue's own. */
export const SORT_KEYS = ['urgent', 'trouble', 'waiting', 'amount'] as const;
/** One order. */
export type SortKey = (typeof SORT_KEYS)[number];

/** What each order is called in the select. */
export const SORT_LABELS: Record<SortKey, string> = {
  urgent: 'Most urgent first',
  trouble: 'Most trouble first',
  waiting: 'Waiting longest first',
  amount: 'Largest amount first',
};

/** What the approver narrowed the inbox to; null, false or empty is "any". */
export interface InboxFilters {
  /**
   * Amounts in minor units of `currency` (19000 for $190.00, 8000 for ¥8,000): an amount filter
   * keeps only items in its currency, so 190 never reads as ¥190 beside $190.00.
   */
  min: number | null;
  max: number | null;
  /** The currency the amounts are in, lower case (`usd`); alone, it keeps the items in that currency. */
  currency: string | null;
  agent: string | null;
  /** A failed rule's name (from the item's `detail`). */
  rule: string | null;
  /** The reason code the item is in front of a person for (`needs_judgment`, `stale_premise`, ...). */
  reason: string | null;
  group: string | null;
  /** Items showing any of these trouble chips. */
  trouble: readonly TroubleKind[];
  /** Only the items the reader may approve and has not (`?needs=me`). */
  needsMe: boolean;
  sort: SortKey;
}

export const NO_FILTERS: InboxFilters = { min: null, max: null, currency: null, agent: null, rule: null, reason: null, group: null, trouble: [], needsMe: false, sort: 'urgent' };

/** The application clock now and the feed's offset (trouble chips depend on both), and who reads (for "needs my approval"). */
export interface FilterClock {
  appNowMs: number;
  offsetMs: number;
  /** The signed-in person's login; without one, "needs my approval" keeps nothing. */
  reader?: string | null;
}

/** The text filters and their query keys, in the order the query is written. */
const TEXT_KEYS = ['agent', 'rule', 'reason', 'group'] as const;

/**
 * The currency an amount filter is read in when the query names none: a link from before amounts
 * named their currency (`?min=190`) reads in dollars, the currency of the policy's own limits.
 */
export const DEFAULT_AMOUNT_CURRENCY = 'usd';

function currencyOf(value: string | null): string | null {
  return value !== null && /^[A-Za-z]{3}$/.test(value) ? value.toLowerCase() : null;
}

function amountOf(value: string | null, currency: string | null): number | null {
  return value === null || currency === null ? null : minorOf(value, currency);
}

function textOf(value: string | null): string | null {
  return value === null || value === '' ? null : value;
}

function isTroubleKind(value: string): value is TroubleKind {
  return (TROUBLE_KINDS as readonly string[]).includes(value);
}

/** The trouble kinds of a query, in chip order; `breached=1` (a link from before trouble filters) is the breached chip. */
function troubleOf(q: URLSearchParams): TroubleKind[] {
  const asked = new Set((q.get('trouble') ?? '').split(',').filter(isTroubleKind));
  if (q.get('breached') === '1') asked.add('breached');
  return TROUBLE_KINDS.filter((kind) => asked.has(kind));
}

/** The filters a query string holds; anything unreadable is ignored, not an error. */
export function parseFilters(search: string): InboxFilters {
  const q = new URLSearchParams(search);
  const sort = q.get('sort') ?? '';
  const named = currencyOf(q.get('currency'));
  const amountCurrency = named ?? DEFAULT_AMOUNT_CURRENCY;
  const min = amountOf(q.get('min'), amountCurrency);
  const max = amountOf(q.get('max'), amountCurrency);
  return {
    min,
    max,
    currency: named ?? (min !== null || max !== null ? DEFAULT_AMOUNT_CURRENCY : null),
    agent: textOf(q.get('agent')),
    rule: textOf(q.get('rule')),
    reason: textOf(q.get('reason')),
    group: textOf(q.get('group')),
    trouble: troubleOf(q),
    needsMe: q.get('needs') === 'me',
    sort: (SORT_KEYS as readonly string[]).includes(sort) ? (sort as SortKey) : 'urgent',
  };
}

/** The query string for these filters: `?currency=usd&min=50.00&agent=…`, amounts in major units, or empty for none. */
export function filtersQuery(filters: InboxFilters): string {
  const q = new URLSearchParams();
  const currency = filters.currency ?? DEFAULT_AMOUNT_CURRENCY;
  if (filters.currency !== null || filters.min !== null || filters.max !== null) q.set('currency', currency);
  if (filters.min !== null) q.set('min', decimalOf(filters.min, currency));
  if (filters.max !== null) q.set('max', decimalOf(filters.max, currency));
  for (const key of TEXT_KEYS) {
    const value = filters[key];
    if (value !== null) q.set(key, value);
  }
  if (filters.trouble.length > 0) q.set('trouble', filters.trouble.join(','));
  if (filters.needsMe) q.set('needs', 'me');
  if (filters.sort !== 'urgent') q.set('sort', filters.sort);
  const text = q.toString();
  return text === '' ? '' : `?${text}`;
}

/**
 * The filters with their amounts read in another currency, as typed: "190" stays 190 of the new
 * currency; an amount the new currency cannot hold (190.50 in yen) is dropped rather than rounded.
 */
export function withCurrency(filters: InboxFilters, currency: string | null): InboxFilters {
  const from = filters.currency ?? DEFAULT_AMOUNT_CURRENCY;
  const to = currency ?? DEFAULT_AMOUNT_CURRENCY;
  const move = (minor: number | null) => (minor === null ? null : minorOf(decimalOf(minor, from), to));
  const min = move(filters.min);
  const max = move(filters.max);
  // With no currency, no amount can stay: an amount names its currency.
  if (currency === null) return { ...filters, currency: null, min: null, max: null };
  return { ...filters, currency, min, max };
}

/**
 * The currency an amount typed with none chosen is read in: dollars, the currency of the policy's
 * limits, while any open item is in dollars; else the one most open items are in (the first by
 * code on a tie). The chip and the currency select say which it is.
 */
export function defaultAmountCurrency(items: readonly InboxItem[]): string {
  const counts = new Map<string, number>();
  for (const item of items) {
    const currency = itemCurrency(item)?.toLowerCase();
    if (currency) counts.set(currency, (counts.get(currency) ?? 0) + 1);
  }
  if (counts.has(DEFAULT_AMOUNT_CURRENCY)) return DEFAULT_AMOUNT_CURRENCY;
  const ranked = [...counts].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
  return ranked[0]?.[0] ?? DEFAULT_AMOUNT_CURRENCY;
}

/** The filters that are on, each in a few words for its chip: "Amount from $190.00", "Currency JPY", "Agent support-bot". */
export function filterChipWords(filters: InboxFilters): { key: keyof InboxFilters | 'amount'; words: string }[] {
  const chips: { key: keyof InboxFilters | 'amount'; words: string }[] = [];
  const currency = filters.currency ?? DEFAULT_AMOUNT_CURRENCY;
  const money = (minor: number) => formatMoney(minor, currency);
  if (filters.min !== null && filters.max !== null) chips.push({ key: 'amount', words: `Amount ${money(filters.min)} to ${money(filters.max)}` });
  else if (filters.min !== null) chips.push({ key: 'amount', words: `Amount from ${money(filters.min)}` });
  else if (filters.max !== null) chips.push({ key: 'amount', words: `Amount up to ${money(filters.max)}` });
  else if (filters.currency !== null) chips.push({ key: 'currency', words: `Currency ${filters.currency.toUpperCase()}` });
  return chips;
}

/** How many filters are on (the order is not a filter; a currency counts apart only without an amount). */
export function activeFilterCount(filters: InboxFilters): number {
  return (
    Number(filters.currency !== null && filters.min === null && filters.max === null) +
    Number(filters.min !== null) +
    Number(filters.max !== null) +
    TEXT_KEYS.filter((key) => filters[key] !== null).length +
    Number(filters.trouble.length > 0) +
    Number(filters.needsMe)
  );
}

/** The names of the rules that failed for an item (empty when it is here for another reason). */
export function rulesOf(item: InboxItem): string[] {
  return Array.isArray(item.detail) ? item.detail.filter((rule): rule is string => typeof rule === 'string') : [];
}

/** The kinds of trouble an item shows now. */
function troubleKindsOf(item: InboxItem, clock: FilterClock): Set<TroubleKind> {
  return new Set(troublesOf(item, clock.appNowMs, clock.offsetMs).map((trouble) => trouble.kind));
}

/** True when an item passes every filter. */
export function matchesFilters(item: InboxItem, filters: InboxFilters, clock: FilterClock): boolean {
  if (filters.currency !== null && itemCurrency(item)?.toLowerCase() !== filters.currency) return false;
  if (filters.min !== null && item.request.amount < filters.min) return false;
  if (filters.max !== null && item.request.amount > filters.max) return false;
  if (filters.agent !== null && item.request.agent !== filters.agent) return false;
  if (filters.rule !== null && !rulesOf(item).includes(filters.rule)) return false;
  if (filters.reason !== null && item.reason !== filters.reason) return false;
  if (filters.group !== null && item.group !== filters.group) return false;
  if (filters.needsMe && !(clock.reader && needsMyApproval(item, clock.reader))) return false;
  if (filters.trouble.length === 0) return true;
  const kinds = troubleKindsOf(item, clock);
  return filters.trouble.some((kind) => kinds.has(kind));
}

/**
 * The items that pass, in the order asked: the queue's own as given, or most trouble first
 * (chips by urgency: one breached before any stale), waiting longest, largest amount (in major
 * units, currencies side by side). Ties keep the queue's order.
 */
export function applyFilters(items: readonly InboxItem[], filters: InboxFilters, clock: FilterClock): InboxItem[] {
  const kept = items.filter((item) => matchesFilters(item, filters, clock));
  if (filters.sort === 'urgent') return kept;
  const rank = new Map(kept.map((item, i) => [item.effect_id, i]));
  const key = (item: InboxItem): number[] => {
    switch (filters.sort) {
      case 'trouble': {
        const kinds = troubleKindsOf(item, clock);
        return [-kinds.size, ...TROUBLE_KINDS.map((kind) => (kinds.has(kind) ? 0 : 1))];
      }
      case 'waiting':
        return [item.waiting_since_ms];
      case 'amount':
        return [-toMajorUnits(item.request.amount, itemCurrency(item))];
      default:
        return [];
    }
  };
  const keys = new Map(kept.map((item) => [item.effect_id, key(item)]));
  return [...kept].sort((a, b) => {
    const x = keys.get(a.effect_id) ?? [];
    const y = keys.get(b.effect_id) ?? [];
    for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return (x[i] ?? 0) - (y[i] ?? 0);
    return (rank.get(a.effect_id) ?? 0) - (rank.get(b.effect_id) ?? 0);
  });
}

/** How many items show each kind of trouble now. */
export function troubleCounts(items: readonly InboxItem[], clock: FilterClock): Record<TroubleKind, number> {
  const counts: Record<TroubleKind, number> = { breached: 0, stale: 0, disputed: 0, refunded_outside: 0 };
  for (const item of items) for (const kind of troubleKindsOf(item, clock)) counts[kind] += 1;
  return counts;
}

/** One choice of a select: its value, its words, and how many open items it keeps. */
export interface FilterChoice {
  value: string;
  label: string;
  count: number;
}

/**
 * The values each select can offer: those the inbox holds now with how many items each keeps,
 * plus the one chosen (so a shared link still shows it). A failed rule is offered in the words it
 * failed with ("over $50.00", "flag: vip"), never by its name, which reads as if it had passed.
 */
export function filterChoices(items: readonly InboxItem[], filters: InboxFilters) {
  const tally = (values: Iterable<string>, chosen: string | null, label: (value: string) => string = (v) => v): FilterChoice[] => {
    const counts = new Map<string, number>();
    for (const value of values) counts.set(value, (counts.get(value) ?? 0) + 1);
    if (chosen !== null && !counts.has(chosen)) counts.set(chosen, 0);
    return [...counts].map(([value, count]) => ({ value, label: label(value), count })).sort((a, b) => a.label.localeCompare(b.label));
  };
  // A rule's words, as its items failed it (one rule can read "over $50.00" and "over ¥7,000").
  const words = new Map<string, Set<string>>();
  for (const item of items) {
    for (const rule of item.failed_rules ?? []) words.set(rule.rule, (words.get(rule.rule) ?? new Set()).add(rule.words));
  }
  return {
    agents: tally(
      items.map((i) => i.request.agent),
      filters.agent,
    ),
    rules: tally(items.flatMap(rulesOf), filters.rule, (name) => [...(words.get(name) ?? [name])].join(' / ')),
    reasons: tally(
      items.map((i) => i.reason),
      filters.reason,
    ),
    groups: tally(
      items.map((i) => i.group),
      filters.group,
    ),
    currencies: tally(
      items.flatMap((i) => itemCurrency(i)?.toLowerCase() ?? []),
      filters.currency,
      (code) => code.toUpperCase(),
    ),
  };
}
