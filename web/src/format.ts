/**
 * Formatting money and time for people. Money arrives as an integer in the currency's smallest
 * unit, as Stripe counts it; time as integer ms.
 */

import { decimalsOf } from '../../shared/money.ts';

/** An amount in major units (dollars, yen), for comparing with what a person types. */
export function toMajorUnits(minorUnits: number, currency: string | null | undefined): number {
  return minorUnits / 10 ** (currency ? decimalsOf(currency) : 2);
}

/**
 * An amount with its currency, e.g. `$80.00`, `€12.50`, `CA$9.99`, `¥8,000`. A currency we do
 * not know is never guessed: the amount is shown with a plain note instead of a symbol.
 */
export function formatMoney(minorUnits: number, currency: string | null | undefined): string {
  if (!currency) return `${(minorUnits / 100).toFixed(2)} (currency not known here)`;
  const decimals = decimalsOf(currency);
  const major = minorUnits / 10 ** decimals;
  try {
    return new Intl.NumberFormat('en-US', {
      style: 'currency',
      currency: currency.toUpperCase(),
      currencyDisplay: 'symbol',
      minimumFractionDigits: decimals,
      maximumFractionDigits: decimals,
    }).format(major);
  } catch {
    return `${major.toFixed(decimals)} ${currency.toUpperCase()}`;
  }
}

/** Names in a sentence: "Ana Lopez", "Bea Novak and Ana Lopez", "Ana, Bea and Cy". */
export function namesInWords(names: readonly string[]): string {
  if (names.length <= 1) return names[0] ?? '';
  return `${names.slice(0, -1).join(', ')} and ${names[names.length - 1]}`;
}

/**
 * The person a refund is made for (`on_behalf_of`), as the page names people: their name when it
 * is a login the directory knows ("Bea Novak"), else as the agent wrote it (an email).
 */
export function beneficiaryName(onBehalfOf: string, displayName: (login: string) => string): string {
  const login = onBehalfOf.trim().toLowerCase();
  const name = displayName(login);
  return name === login ? onBehalfOf : name;
}

/** Under this long, a countdown shows seconds: near a deadline every second counts; further off, minutes are calm enough. */
const COUNTDOWN_SECONDS_UNDER_MS = 2 * 60_000;

/**
 * A duration for a countdown, never finer than a person needs: `2d 4h` when days away, `3h 05m`,
 * `47m`, and to the second only in the last two minutes (`1m 05s`, `45s`). Whole units are cut,
 * never rounded up, so the words change once a minute while a deadline is minutes away.
 */
export function formatDuration(ms: number): string {
  const totalS = Math.max(0, Math.floor(ms / 1000));
  const d = Math.floor(totalS / 86_400);
  const h = Math.floor((totalS % 86_400) / 3600);
  const m = Math.floor((totalS % 3600) / 60);
  const s = totalS % 60;
  if (ms < COUNTDOWN_SECONDS_UNDER_MS) return m > 0 ? `${m}m ${String(s).padStart(2, '0')}s` : `${s}s`;
  if (d > 0) return h > 0 ? `${d}d ${h}h` : `${d}d`;
  if (h > 0) return `${h}h ${String(m).padStart(2, '0')}m`;
  return `${m}m`;
}

const timeOnly = new Intl.DateTimeFormat('en-GB', { hour: '2-digit', minute: '2-digit', second: '2-digit' });
const dayAndTime = new Intl.DateTimeFormat('en-GB', { day: 'numeric', month: 'short', hour: '2-digit', minute: '2-digit' });
const full = new Intl.DateTimeFormat('en-GB', { dateStyle: 'medium', timeStyle: 'medium' });

/** A moment: the time alone when it is today (by `todayMs`), else the day and the time. */
export function formatWhen(ms: number, todayMs: number = Date.now()): string {
  const sameDay = new Date(ms).toDateString() === new Date(todayMs).toDateString();
  return sameDay ? timeOnly.format(ms) : dayAndTime.format(ms);
}

const hourMinute = new Intl.DateTimeFormat('en-GB', { hour: '2-digit', minute: '2-digit' });

/** A moment to the minute, `14:02` today (by `todayMs`), else the day and the time: for "as of" and "at" in sentences. */
export function formatMinute(ms: number, todayMs: number = Date.now()): string {
  const sameDay = new Date(ms).toDateString() === new Date(todayMs).toDateString();
  return sameDay ? hourMinute.format(ms) : dayAndTime.format(ms);
}

/** A moment in full, for a tooltip or a `<time>` title. */
export function formatFull(ms: number): string {
  return full.format(ms);
}

/** An ISO string for `<time dateTime>`. */
export function isoOf(ms: number): string {
  return new Date(ms).toISOString();
}

/** A short relative phrase: `4 min ago`, `just now`. */
export function formatAgo(ms: number, nowMs: number): string {
  const s = Math.round((nowMs - ms) / 1000);
  if (s < 45) return 'just now';
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  if (s < 86_400) return `${Math.round(s / 3600)} h ago`;
  return `${Math.round(s / 86_400)} d ago`;
}

/** A short age for a one-line row: `just now`, `4m ago`, `2h ago`, `3d ago`. */
export function formatAgoShort(ms: number, nowMs: number): string {
  const s = Math.round((nowMs - ms) / 1000);
  if (s < 45) return 'just now';
  if (s < 3600) return `${Math.max(1, Math.round(s / 60))}m ago`;
  if (s < 86_400) return `${Math.round(s / 3600)}h ago`;
  return `${Math.round(s / 86_400)}d ago`;
}
