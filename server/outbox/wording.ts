// Money and time in the words messages use. Amounts arrive in the currency's smallest unit, as
// Stripe counts them (the web inbox words them the same way: web/src/format.ts); times are ms.

/** Stripe's zero-decimal currencies: the amount is already whole units (stripe.com/docs/currencies). */
const ZERO_DECIMAL = new Set(['bif', 'clp', 'djf', 'gnf', 'jpy', 'kmf', 'krw', 'mga', 'pyg', 'rwf', 'ugx', 'vnd', 'vuv', 'xaf', 'xof', 'xpf']);
/** Stripe's three-decimal currencies. */
const THREE_DECIMAL = new Set(['bhd', 'jod', 'kwd', 'omr', 'tnd']);

function decimalsOf(currency: string): number {
  const code = currency.toLowerCase();
  if (ZERO_DECIMAL.has(code)) return 0;
  return THREE_DECIMAL.has(code) ? 3 : 2;
}

/**
 * An amount with its currency: `$80.00`, `€12.50`, `¥8,000`, `CA$9.99`. With no currency the
 * amount says so rather than guess a symbol.
 */
export function formatAmount(minorUnits: number, currency: string | null): string {
  if (currency === null || !/^[A-Za-z]{3}$/.test(currency)) return `${(minorUnits / 100).toFixed(2)} (currency not recorded)`;
  const decimals = decimalsOf(currency);
  const major = minorUnits / 10 ** decimals;
  return new Intl.NumberFormat('en-US', {
    style: 'currency',
    currency: currency.toUpperCase(),
    currencyDisplay: 'symbol',
    minimumFractionDigits: decimals,
    maximumFractionDigits: decimals,
  }).format(major);
}

const MINUTE_MS = 60_000;
const HOUR_MS = 60 * MINUTE_MS;
const DAY_MS = 24 * HOUR_MS;

/** A span for people, to the minute: `2d 4h`, `3h 20m`, `12m`, `less than a minute`. */
export function formatSpan(ms: number): string {
  const abs = Math.abs(ms);
  if (abs < MINUTE_MS) return 'less than a minute';
  const days = Math.floor(abs / DAY_MS);
  const hours = Math.floor((abs % DAY_MS) / HOUR_MS);
  const minutes = Math.floor((abs % HOUR_MS) / MINUTE_MS);
  if (days > 0) return hours === 0 ? `${days}d` : `${days}d ${hours}h`;
  if (hours > 0) return minutes === 0 ? `${hours}h` : `${hours}h ${minutes}m`;
  return `${minutes}m`;
}

/** A deadline in UTC and relative to `nowMs`: `2026-12-03 09:00 UTC (in 3h 20m)` or `(overdue by 12m)`. */
export function formatDeadline(dueMs: number, nowMs: number): string {
  const iso = new Date(dueMs).toISOString();
  const when = `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC`;
  const left = dueMs - nowMs;
  return left >= 0 ? `${when} (in ${formatSpan(left)})` : `${when} (overdue by ${formatSpan(left)})`;
}
