// Amounts for people. Amounts arrive in the currency's smallest unit, as Stripe counts them (the
// web inbox words them with the same decimals: web/src/format.ts). No I/O.

/** Stripe's zero-decimal currencies: the amount is already whole units (stripe.com/docs/currencies). */
const ZERO_DECIMAL = new Set(['bif', 'clp', 'djf', 'gnf', 'jpy', 'kmf', 'krw', 'mga', 'pyg', 'rwf', 'ugx', 'vnd', 'vuv', 'xaf', 'xof', 'xpf']);
/** Stripe's three-decimal currencies. */
const THREE_DECIMAL = new Set(['bhd', 'jod', 'kwd', 'omr', 'tnd']);

/**
 * The key money is kept under when the facts named no currency (a payment never read): its amounts
 * are never put with a real currency's, on the scoreboard, the ledger's totals or a reconciliation.
 */
export const UNKNOWN_CURRENCY = 'unknown';

/** How many decimals the currency's major unit has, the way Stripe counts it (0 for yen, 3 for dinars, else 2). */
export function decimalsOf(currency: string): number {
  const code = currency.toLowerCase();
  if (ZERO_DECIMAL.has(code)) return 0;
  return THREE_DECIMAL.has(code) ? 3 : 2;
}

/**
 * An amount in minor units as a decimal in the currency's major unit, by its own exponent, made
 * from the integer's digits (never through a float): 2000 dollar cents `20.00`, 3000 yen `3000`,
 * 1500 thousandths of a dinar `1.500`, -5 cents `-0.05`.
 */
export function decimalOf(minorUnits: number, currency: string): string {
  if (!Number.isSafeInteger(minorUnits)) throw new Error(`decimalOf: ${minorUnits} is not a whole number of minor units`);
  const decimals = decimalsOf(currency);
  const digits = String(Math.abs(minorUnits)).padStart(decimals + 1, '0');
  const sign = minorUnits < 0 ? '-' : '';
  if (decimals === 0) return `${sign}${digits}`;
  return `${sign}${digits.slice(0, -decimals)}.${digits.slice(-decimals)}`;
}

/**
 * An amount with its currency: `$80.00`, `€12.50`, `¥8,000`, `CA$9.99`. With no currency the
 * amount says so rather than guess a symbol.
 */
export function formatAmount(minorUnits: number, currency: string | null): string {
  if (currency === null || !/^[A-Za-z]{3}$/.test(currency)) return `${(minorUnits / 100).toFixed(2)} (currency not recorded)`;
  const decimals = decimalsOf(currency);
  const major = minorUnits / 10 ** decimals;
  return currencyFormat(currency.toUpperCase(), decimals).format(major);
}

/** One formatter per currency and its decimals, made at first use: making one costs far more than formatting with it. */
const currencyFormats = new Map<string, Intl.NumberFormat>();

function currencyFormat(currency: string, decimals: number): Intl.NumberFormat {
  const key = `${currency}:${decimals}`;
  let format = currencyFormats.get(key);
  if (format === undefined) {
    format = new Intl.NumberFormat('en-US', { style: 'currency', currency, currencyDisplay: 'symbol', minimumFractionDigits: decimals, maximumFractionDigits: decimals });
    currencyFormats.set(key, format);
  }
  return format;
}

/**
 * What a person typed in a currency's major unit, in its minor units, read from the digits (never
 * through a float): `190` dollars 19000, `189.5` dinars 189500, `8000` yen 8000. Null for anything
 * that is not a plain non-negative decimal, or finer than the currency counts (half a yen, a
 * thousandth of a dollar): such an amount is never rounded to one the person did not type.
 */
export function minorOf(typed: string, currency: string): number | null {
  const match = /^(\d+)(?:\.(\d*))?$/.exec(typed.trim());
  if (!match) return null;
  const decimals = decimalsOf(currency);
  const fraction = (match[2] ?? '').replace(/0+$/, '');
  if (fraction.length > decimals) return null;
  const minor = Number(`${match[1]}${fraction.padEnd(decimals, '0')}`);
  return Number.isSafeInteger(minor) ? minor : null;
}
