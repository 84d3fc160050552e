import type { InboxItem } from '../../shared/api.ts';
import { itemCurrency } from './currency.ts';
import { toMajorUnits } from './format.ts';

// The inbox's filters, kept in the address bar (`/?agent=support-bot&breached=1`) so a link
// shares them, a reload keeps them and the back button undoes them. Pure: the page reads the
// query, these functions say which items it keeps.

/** What the approver narrowed the inbox to; null or false is "any". */
export interface InboxFilters {
  /** Amounts in major units of each item's own currency (what a person types: 50 for $50.00). */
  min: number | null;
  max: number | null;
  agent: string | null;
  /** A failed rule's name (from the item's `detail`). */
  rule: string | null;
  /** The reason code the item is in front of a person for (`needs_judgment`, `stale_premise`, ...). */
  reason: string | null;
  group: string | null;
  breached: boolean;
}

export const NO_FILTERS: InboxFilters = { min: null, max: null, agent: null, rule: null, reason: null, group: null, breached: false };

/** The text filters and their query keys, in the order the query is written. */
const TEXT_KEYS = ['agent', 'rule', 'reason', 'group'] as const;

function amountOf(value: string | null): number | null {
  if (value === null || value.trim() === '') return null;
  const n = Number(value);
  return Number.isFinite(n) && n >= 0 ? n : null;
}

function textOf(value: string | null): string | null {
  return value === null || value === '' ? null : value;
}

/** The filters a query string holds; anything unreadable is ignored, not an error. */
export function parseFilters(search: string): InboxFilters {
  const q = new URLSearchParams(search);
  return {
    min: amountOf(q.get('min')),
    max: amountOf(q.get('max')),
    agent: textOf(q.get('agent')),
    rule: textOf(q.get('rule')),
    reason: textOf(q.get('reason')),
    group: textOf(q.get('group')),
    breached: q.get('breached') === '1',
  };
}

/** The query string for these filters: `?min=50&agent=…`, or empty for none. */
export function filtersQuery(filters: InboxFilters): string {
  const q = new URLSearchParams();
  if (filters.min !== null) q.set('min', String(filters.min));
  if (filters.max !== null) q.set('max', String(filters.max));
  for (const key of TEXT_KEYS) {
    const value = filters[key];
    if (value !== null) q.set(key, value);
  }
  if (filters.breached) q.set('breached', '1');
  const text = q.toString();
  return text === '' ? '' : `?${text}`;
}

/** How many filters are on. */
export function activeFilterCount(filters: InboxFilters): number {
  return (
    Number(filters.min !== null) +
    Number(filters.max !== null) +
    TEXT_KEYS.filter((key) => filters[key] !== null).length +
    Number(filters.breached)
  );
}

/** The names of the rules that failed for an item (empty when it is here for another reason). */
export function rulesOf(item: InboxItem): string[] {
  return Array.isArray(item.detail) ? item.detail.filter((rule): rule is string => typeof rule === 'string') : [];
}

/** True when an item passes every filter. */
export function matchesFilters(item: InboxItem, filters: InboxFilters): boolean {
  const amount = toMajorUnits(item.request.amount, itemCurrency(item));
  if (filters.min !== null && amount < filters.min) return false;
  if (filters.max !== null && amount > filters.max) return false;
  if (filters.agent !== null && item.request.agent !== filters.agent) return false;
  if (filters.rule !== null && !rulesOf(item).includes(filters.rule)) return false;
  if (filters.reason !== null && item.reason !== filters.reason) return false;
  if (filters.group !== null && item.group !== filters.group) return false;
  return !filters.breached || item.breach;
}

/** The items that pass, in the order given. */
export function applyFilters(items: readonly InboxItem[], filters: InboxFilters): InboxItem[] {
  return items.filter((item) => matchesFilters(item, filters));
}

/** The values each select can offer: those the inbox holds now, plus the one chosen (so a shared link still shows it). */
export function filterChoices(items: readonly InboxItem[], filters: InboxFilters) {
  const collect = (values: Iterable<string>, chosen: string | null) => [...new Set([...values, ...(chosen === null ? [] : [chosen])])].sort();
  return {
    agents: collect(items.map((i) => i.request.agent), filters.agent),
    rules: collect(items.flatMap(rulesOf), filters.rule),
    reasons: collect(items.map((i) => i.reason), filters.reason),
    groups: collect(items.map((i) => i.group), filters.group),
  };
}
