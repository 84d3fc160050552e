import { limits } from '../../shared/limits.ts';
import { configLimits } from './schema.ts';

/** A config file that cannot be used; the message names the file and the exact field. */
export class ConfigError extends Error {
  readonly code = 'config_invalid';

  constructor(
    readonly source: string,
    /** The field path, e.g. `routes[2].chain[0]`, or the position of a YAML syntax error. */
    readonly field: string,
    problem: string,
    /** For a refusal a script may look for by name (e.g. `mirror_not_shared`), that name; else null. */
    readonly reason: string | null = null,
  ) {
    super(`${source}: ${field}: ${problem}`);
    this.name = 'ConfigError';
  }
}

/** A plain mapping as read from YAML. */
export type Mapping = Record<string, unknown>;

/** True for a plain mapping: an object that is not a list. */
function isMapping(value: unknown): value is Mapping {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The path of a key under `path`; keys that are not plain words are quoted so the path stays unambiguous. */
export function keyPath(path: string, key: string): string {
  const segment = /^[A-Za-z0-9_-]+$/.test(key) ? key : JSON.stringify(key);
  return path === '' ? segment : `${path}.${segment}`;
}

/** Field readers bound to one file: each returns the value or throws a ConfigError naming the field. */
export class Checker {
  constructor(readonly source: string) {}

  /** Refuse the file at `field`; `reason`, when given, is the refusal's stable name. */
  fail(field: string, problem: string, reason: string | null = null): never {
    throw new ConfigError(this.source, field === '' ? '(top level)' : field, problem, reason);
  }

  /** Any mapping, keys unchecked: for reading a discriminating key before the rest. */
  object(value: unknown, path: string): Mapping {
    if (!isMapping(value)) this.fail(path, `must be a mapping, got ${describeValue(value)}`);
    return value;
  }

  /** A mapping with only `allowed` keys and every `required` one present. */
  mapping(value: unknown, path: string, allowed: readonly string[], required: readonly string[] = []): Mapping {
    const mapping = this.object(value, path);
    for (const key of Object.keys(mapping)) {
      if (!allowed.includes(key)) this.fail(keyPath(path, key), `unknown key (expected one of ${allowed.join(', ')})`);
    }
    for (const key of required) {
      if (!Object.hasOwn(mapping, key)) this.fail(keyPath(path, key), 'is required');
    }
    return mapping;
  }

  /** A mapping whose keys are names and whose values are read by the caller. */
  entries(value: unknown, path: string): [string, unknown][] {
    const entries = Object.entries(this.object(value, path));
    if (entries.length > configLimits.entriesMax) this.fail(path, `has more than ${configLimits.entriesMax} entries`);
    return entries;
  }

  list(value: unknown, path: string, options: { nonEmpty?: boolean } = {}): unknown[] {
    if (!Array.isArray(value)) this.fail(path, `must be a list, got ${describeValue(value)}`);
    if (options.nonEmpty && value.length === 0) this.fail(path, 'must not be empty');
    if (value.length > configLimits.entriesMax) this.fail(path, `has more than ${configLimits.entriesMax} entries`);
    return value;
  }

  string(value: unknown, path: string): string {
    if (typeof value !== 'string') this.fail(path, `must be a string, got ${describeValue(value)}`);
    return value;
  }

  /** A string from a closed list; `what` names the list in the message, e.g. "a role". */
  oneOf<T extends string>(value: unknown, path: string, values: readonly T[], what: string): T {
    const text = this.string(value, path);
    const found = values.find((known) => known === text);
    if (found === undefined) this.fail(path, `"${text}" is not ${what} (expected one of ${values.join(', ')})`);
    return found;
  }

  boolean(value: unknown, path: string): boolean {
    if (typeof value !== 'boolean') this.fail(path, `must be true or false, got ${describeValue(value)}`);
    return value;
  }

  /** A name of a person, agent, group or route: `[a-z0-9._-]{1,64}`. */
  name(value: unknown, path: string): string {
    const name = this.string(value, path);
    if (!configLimits.namePattern.test(name)) {
      this.fail(path, `${JSON.stringify(name)} is not a valid name (1 to 64 of a-z, 0-9, ".", "_", "-")`);
    }
    return name;
  }

  /** Text shown to people: not blank, not too long. */
  label(value: unknown, path: string): string {
    const label = this.string(value, path);
    if (label.trim() === '') this.fail(path, 'must not be empty');
    if (label.length > configLimits.labelCharsMax) this.fail(path, `must be at most ${configLimits.labelCharsMax} characters`);
    return label;
  }

  /** A request flag as agents send it. */
  flag(value: unknown, path: string): string {
    const flag = this.string(value, path);
    if (flag === '' || flag.length > limits.flagCharsMax) this.fail(path, `must be 1 to ${limits.flagCharsMax} characters`);
    return flag;
  }

  /** A positive whole amount in a currency's smallest unit, no larger than any refund can be. */
  minorUnits(value: unknown, path: string): number {
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0) {
      this.fail(path, `must be a positive whole number in the smallest currency unit (cents for USD, whole yen for JPY), got ${describeValue(value)}`);
    }
    if (value > limits.refundCentsMax) this.fail(path, `must be at most ${limits.refundCentsMax} in the smallest currency unit, got ${value}`);
    return value;
  }

  /**
   * A threshold in each currency it names: a mapping of lowercase currency codes, as Stripe writes
   * them, to positive amounts in that currency's smallest unit (`{usd: 5000, jpy: 7000}`).
   */
  amounts(value: unknown, path: string): Record<string, number> {
    if (typeof value === 'number') {
      this.fail(path, `must name its currency, e.g. \`{usd: ${value}}\` for ${value} cents of a dollar (a mapping of currency to amount in its smallest unit)`);
    }
    const entries = this.entries(value, path);
    if (entries.length === 0) this.fail(path, 'must name at least one currency, e.g. `{usd: 5000}`');
    const amounts: Record<string, number> = {};
    for (const [currency, amount] of entries) {
      const at = keyPath(path, currency);
      if (!/^[a-z]{3}$/.test(currency)) this.fail(at, `${JSON.stringify(currency)} is not a currency code: three lowercase letters, the way Stripe writes them (usd, eur, jpy)`);
      amounts[currency] = this.minorUnits(amount, at);
    }
    return amounts;
  }

  /** A positive whole number of minutes, returned in ms. */
  minutesAsMs(value: unknown, path: string): number {
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0) {
      this.fail(path, `must be a positive whole number of minutes, got ${describeValue(value)}`);
    }
    if (value > configLimits.minutesMax) this.fail(path, `must be at most ${configLimits.minutesMax} minutes (a year), got ${value}`);
    return value * 60_000;
  }

  /** A list of distinct values, each read by `read`. */
  distinct<T>(value: unknown, path: string, read: (item: unknown, path: string) => T, options: { nonEmpty?: boolean } = {}): T[] {
    const seen = new Set<T>();
    return this.list(value, path, options).map((item, i) => {
      const itemPath = `${path}[${i}]`;
      const entry = read(item, itemPath);
      if (seen.has(entry)) this.fail(itemPath, `${JSON.stringify(entry)} appears twice`);
      seen.add(entry);
      return entry;
    });
  }
}

/** A short description of a wrong value for an error message. */
export function describeValue(value: unknown): string {
  if (value === null || value === undefined) return 'nothing';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  return String(value);
}

/**
 * A URL for an error message, with nothing in it that may be a secret: its credentials are `…@`,
 * its query `?…` and its fragment `#…`, as the URL parser reads them. Text that is not a URL is
 * quoted only when it has no `@`, `?` or `#` (where a password or a token would be); an opaque
 * URL (`bot:pw@host` reads as the scheme `bot:`) shows its scheme only. Quoted and cut short as
 * describeValue does.
 */
export function describeUrl(text: string): string {
  if (!URL.canParse(text)) return /[@?#]/.test(text) ? 'the value (not shown: it may carry a password or a token)' : describeValue(text);
  const url = new URL(text);
  if (url.host === '') return describeValue(`${url.protocol}…`);
  const credentials = url.username !== '' || url.password !== '' ? '…@' : '';
  const path = url.pathname === '/' ? '' : url.pathname;
  return describeValue(`${url.protocol}//${credentials}${url.host}${path}${url.search === '' ? '' : '?…'}${url.hash === '' ? '' : '#…'}`);
}

/** A host name for an error message: one written as a URL is shown as describeUrl shows it, and whatever comes before an `@` is cut. */
export function describeHost(text: string): string {
  if (text.includes('://')) return describeUrl(text);
  const at = text.lastIndexOf('@');
  return describeValue(at === -1 ? text : `…@${text.slice(at + 1)}`);
}
