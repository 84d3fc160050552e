// Money and time in the words messages use. Amounts are worded by shared/money.ts; times are ms.

export { formatAmount } from '../../shared/money.ts';

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
