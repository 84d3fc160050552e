import { join, resolve } from 'node:path';
import type { StoragePlace } from '../../db/server-storage.ts';
import { DEFAULT_CONFIG_PATH } from './load.ts';
import { describeUrl } from './check.ts';
import { credentialPath, readSecretFileOrProblem } from './secret-file.ts';
import { reconcilerLimits } from '../confirm/reconciler.ts';
import { KILL_POINTS, type KillPoint } from '../gate/kill-points.ts';
import { RATE_LIMIT_MODES, type RateLimitMode } from '../sandbox/rate-limits.ts';

/** How much the server logs; `silent` logs nothing. */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
/** One log level. */
export type LogLevel = (typeof LOG_LEVELS)[number];

/** The shortest reconciler interval the reconciler accepts: its default lookups per pass, at its rate cap. */
const RECONCILE_MS_MIN = (reconcilerLimits.lookupsPerPassMaxDefault * 1000) / reconcilerLimits.lookupsPerSecondMax;

/** The systemd credentials the Stripe keys may come in (`LoadCredential=stripe-secret-key:<path>`). */
export const STRIPE_SECRET_KEY_CREDENTIAL = 'stripe-secret-key';
export const STRIPE_LIVE_KEY_CREDENTIAL = 'stripe-live-key';

/** Everything Interlock reads from its environment, parsed and checked once at start. */
export interface InterlockEnv {
  /** `PORT` (3000): where the server listens. */
  port: number;
  /** `HOST` (127.0.0.1). */
  host: string;
  /** `DATA_DIR` (`data`), absolute: the journal, the signing key, the embedded sandbox's file. */
  dataDir: string;
  /** `DB_PATH` (`DATA_DIR/interlock.sqlite`), absolute: the journal's SQLite file, unless `DATABASE_URL` is set. */
  dbPath: string;
  /**
   * `DATABASE_URL`: a postgresql:// URL of the application's role. Set, everything is kept in that
   * PostgreSQL database instead of the SQLite file (docs/operators/postgresql.md).
   */
  databaseUrl: string | null;
  /** `DATABASE_MIGRATE_URL` (`DATABASE_URL`): the database owner's URL, which applies the migrations at start. */
  databaseMigrateUrl: string | null;
  /**
   * `DATABASE_LISTEN_URL` (`DATABASE_URL`): where the server listens for the other servers' signals
   * (LISTEN/NOTIFY), on one connection of its own: a direct one when `DATABASE_URL` goes through a
   * transaction pooler, which cannot keep a LISTEN.
   */
  databaseListenUrl: string | null;
  /**
   * `DATABASE_POOL_MAX` (unset: db/pg/pool.ts `poolMaxDefault`): connections the server's pool may
   * hold on PostgreSQL, besides its one listening connection (docs/operators/postgresql.md).
   */
  databasePoolMax: number | null;
  /**
   * `RECEIPT_KEY_PATH`, absolute: the receipt signing key (PEM PKCS#8 Ed25519), read and never
   * created. Unset: a systemd credential, else the data folder's key (receipts/key-file.ts).
   */
  receiptKeyPath: string | null;
  /** `CREDENTIALS_DIRECTORY`, absolute: where systemd hands over the files of `LoadCredential=`; set by systemd, not by hand. */
  credentialsDirectory: string | null;
  /** `SANDBOX_PORT` (12111): where the embedded Stripe sandbox listens. */
  sandboxPort: number;
  /**
   * `STRIPE_SECRET_KEY`, or the file `STRIPE_SECRET_KEY_FILE` names, or the systemd credential
   * `stripe-secret-key`: a test-mode key, used only when the config says `stripe.mode: test`.
   */
  stripeSecretKey: string | null;
  /** `STRIPE_WEBHOOK_SECRETS`: comma-separated `whsec_` secrets, for Stripe test mode. */
  stripeWebhookSecrets: string[];
  /**
   * `STRIPE_LIVE_KEY`, or the file `STRIPE_LIVE_KEY_FILE` names, or the systemd credential
   * `stripe-live-key`: a live restricted key (`rk_live_...`), used only when the config says
   * `stripe.mode: live`; a full live secret key (`sk_live_...`) is refused.
   */
  stripeLiveKey: string | null;
  /** `STRIPE_LIVE_WEBHOOK_SECRETS`: comma-separated `whsec_` secrets of the live-mode webhook endpoint. */
  stripeLiveWebhookSecrets: string[];
  /** `STRIPE_SANDBOX_URL`: a sandbox running elsewhere, instead of the embedded one. */
  stripeSandboxUrl: URL | null;
  /** `INTERLOCK_CONFIG` (`interlock.yaml` at the project root). */
  configPath: string;
  /** `INTERLOCK_KILL_AT`: where a crash test makes the process kill itself; none in production. */
  killAt: KillPoint[];
  /** `INTERLOCK_CLAIM_TTL_MS`: how long a sender owns an effect (default `limits.claimTtlMs`). */
  claimTtlMs: number | null;
  /** `INTERLOCK_RECONCILE_MS` (60000): how often refunds whose webhook never came are looked up. */
  reconcileMs: number;
  /** `SANDBOX_DEMO` (1): make demo payments in an empty embedded sandbox; `0` makes none. */
  sandboxDemo: boolean;
  /**
   * `SANDBOX_RATE_LIMITS` (test): which of Stripe's published limits the embedded sandbox holds:
   * `test` (25 operations a second, 25 per endpoint, as Stripe test mode), `live` (100, 25 per
   * endpoint) or `off`.
   */
  sandboxRateLimits: RateLimitMode;
  /**
   * `INTERLOCK_DEMO` (unset): demo traffic, an agent named `demo` asking for refunds over the
   * embedded sandbox. Unset, it runs wherever the embedded sandbox does; `1` asks for it (and is
   * refused with Stripe test mode); `0` turns it off. `SANDBOX_DEMO=0` and `test_mode` turn it off too.
   */
  demo: boolean | null;
  /** `LOG_LEVEL` (info). */
  logLevel: LogLevel;
  /**
   * The whole environment, for the secrets the config names by variable (`*_env` keys: an SMTP
   * password, a Slack webhook URL, a callback secret); only the config reads it, and only those.
   */
  secrets: RawEnv;
}

/** A bad environment variable: the message names it, and the server does not start. */
export class EnvError extends Error {}

type RawEnv = Readonly<Record<string, string | undefined>>;

/** Reads one variable at a time and collects every refusal, so one start names every bad value. */
class EnvReader {
  readonly problems: string[] = [];

  constructor(private readonly env: RawEnv) {}

  /** The value, or null when unset or empty (an empty variable means "the default"). */
  raw(name: string): string | null {
    const value = this.env[name];
    return value === undefined || value === '' ? null : value;
  }

  refuse(name: string, expected: string, value: string | null): null {
    this.problems.push(value === null ? `${name} ${expected}` : `${name} ${expected}, not ${JSON.stringify(value)}`);
    return null;
  }

  wholeNumber(name: string, fallback: number, min: number, max: number, expected: string): number {
    const value = this.raw(name);
    if (value === null) return fallback;
    const parsed = /^\d{1,16}$/.test(value) ? Number(value) : Number.NaN;
    if (Number.isSafeInteger(parsed) && parsed >= min && parsed <= max) return parsed;
    this.refuse(name, expected, value);
    return fallback;
  }

  port(name: string, fallback: number): number {
    return this.wholeNumber(name, fallback, 0, 65_535, 'must be a whole number from 0 to 65535');
  }

  oneOf<T extends string>(name: string, values: readonly T[], fallback: T): T {
    const value = this.raw(name);
    if (value === null) return fallback;
    const found = values.find((v) => v === value);
    if (found !== undefined) return found;
    this.refuse(name, `must be one of ${values.join(', ')}`, value);
    return fallback;
  }
}

function readKillPoints(read: EnvReader): KillPoint[] {
  const value = read.raw('INTERLOCK_KILL_AT');
  if (value === null) return [];
  const names = value.split(',').map((s) => s.trim());
  const points = names.flatMap((name) => KILL_POINTS.filter((point) => point === name));
  if (points.length === names.length) return points;
  read.refuse('INTERLOCK_KILL_AT', `must be kill points separated by commas (${KILL_POINTS.join(', ')})`, value);
  return [];
}

function readSandboxUrl(read: EnvReader): URL | null {
  const value = read.raw('STRIPE_SANDBOX_URL');
  if (value === null) return null;
  const url = URL.canParse(value) ? new URL(value) : null;
  if (url !== null && url.protocol === 'http:' && url.hostname !== '') return url;
  // Shown without its credentials or query: what is printed ends up in terminals and CI logs.
  return read.refuse('STRIPE_SANDBOX_URL', `must be an http:// URL such as http://127.0.0.1:12111, not ${describeUrl(value)}`, null);
}

/** A postgres:// or postgresql:// URL naming a database, or the refusal of `name`, shown without its password. */
function readPgUrl(read: EnvReader, name: string): string | null {
  const value = read.raw(name);
  if (value === null) return null;
  const url = URL.canParse(value) ? new URL(value) : null;
  if (url === null || (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:')) {
    return read.refuse(name, `must be a postgresql:// URL such as postgresql://interlock_app:…@127.0.0.1:5432/interlock, not ${describeUrl(value)}`, null);
  }
  if (url.pathname.length < 2) return read.refuse(name, `must name the database after the host (postgresql://role:…@host:5432/database), not ${describeUrl(value)}`, null);
  return value;
}

/**
 * `DATABASE_URL` and `DATABASE_MIGRATE_URL` (which defaults to `DATABASE_URL`): both unset keeps the
 * SQLite file. The owner's URL alone, or a database named beside `DB_PATH`, is refused: the
 * journal is kept in one place.
 */
function readDatabaseUrls(read: EnvReader): { url: string | null; migrateUrl: string | null; listenUrl: string | null } {
  const url = readPgUrl(read, 'DATABASE_URL');
  const migrateUrl = readPgUrl(read, 'DATABASE_MIGRATE_URL');
  const listenUrl = readPgUrl(read, 'DATABASE_LISTEN_URL');
  for (const name of ['DATABASE_MIGRATE_URL', 'DATABASE_LISTEN_URL', 'DATABASE_POOL_MAX']) {
    if (read.raw('DATABASE_URL') === null && read.raw(name) !== null) {
      read.refuse(name, 'is set without DATABASE_URL: set DATABASE_URL to the application role\'s URL too, or unset both to keep the journal in SQLite', null);
    }
  }
  if (read.raw('DATABASE_URL') !== null && read.raw('DB_PATH') !== null) {
    read.refuse('DB_PATH', 'and DATABASE_URL are both set: the journal is kept in one place; unset DB_PATH to keep it in PostgreSQL, or DATABASE_URL to keep it in SQLite', null);
  }
  return { url, migrateUrl: url === null ? null : (migrateUrl ?? url), listenUrl: url === null ? null : (listenUrl ?? url) };
}

/** A secret read from the environment and what a refusal calls it: the variable, its `_FILE` variable, or the credential. */
interface EnvSecret {
  value: string;
  named: string;
}

/**
 * A secret from `name`, or from the file `name_FILE` names (not both), or else from the systemd
 * credential `credential` in $CREDENTIALS_DIRECTORY when there is one, as the receipt key is found.
 * A file is read bounded and trimmed; one that cannot be read, or is empty, is refused by name.
 */
function readSecret(read: EnvReader, name: string, credential: string, credentialsDirectory: string | null): EnvSecret | null {
  const value = read.raw(name);
  const fileVariable = `${name}_FILE`;
  const file = read.raw(fileVariable);
  if (value !== null && file !== null) return read.refuse(name, `and ${fileVariable} are both set: give one of them`, null);
  if (value !== null) return { value, named: name };
  if (file !== null) return readSecretIn(read, resolve(file), `${fileVariable} names ${shownPath(resolve(file))}, which`, fileVariable);
  const path = credentialPath(credentialsDirectory, credential);
  return path === null ? null : readSecretIn(read, path, `the systemd credential ${path} (CREDENTIALS_DIRECTORY)`, `the systemd credential ${path}`);
}

/**
 * A path as a refusal shows it: quoted when it holds what a terminal does not show (a CR left by an
 * env file saved with CRLF, a space at its end), so the name that cannot be read is seen as it is.
 */
function shownPath(path: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it looks for
  return /[\u0000-\u001f\u007f]|\s$/.test(path) ? JSON.stringify(path) : path;
}

function readSecretIn(read: EnvReader, path: string, subject: string, named: string): EnvSecret | null {
  const file = readSecretFileOrProblem(path);
  if ('problem' in file) return read.refuse(subject, file.problem, null);
  const value = file.text.trim();
  if (value === '') return read.refuse(subject, 'is empty', null);
  return { value, named };
}

// Secrets are never echoed in a refusal: the message goes to logs and terminals.
function readStripeSecrets(
  read: EnvReader,
  credentialsDirectory: string | null,
): { key: string | null; webhookSecrets: string[]; liveKey: string | null; liveWebhookSecrets: string[] } {
  const key = readSecret(read, 'STRIPE_SECRET_KEY', STRIPE_SECRET_KEY_CREDENTIAL, credentialsDirectory);
  if (key !== null && !/^(sk|rk)_test_[A-Za-z0-9_]+$/.test(key.value)) {
    read.refuse(key.named, 'must be a Stripe test-mode key (sk_test_... or rk_test_...); a live key goes in STRIPE_LIVE_KEY', null);
  }
  const liveKey = readSecret(read, 'STRIPE_LIVE_KEY', STRIPE_LIVE_KEY_CREDENTIAL, credentialsDirectory);
  if (liveKey?.value.startsWith('sk_live_')) {
    read.refuse(
      liveKey.named,
      "is a full live secret key (sk_live_...), which may do anything on the Stripe account; give Interlock a restricted key (rk_live_...) with only the permissions it uses (docs/operators/going-live.md), so a leaked key can do no more than Interlock does",
      null,
    );
  } else if (liveKey !== null && !/^rk_live_[A-Za-z0-9_]+$/.test(liveKey.value)) {
    read.refuse(liveKey.named, 'must be a Stripe live restricted key (rk_live_...)', null);
  }
  return {
    key: key?.value ?? null,
    webhookSecrets: readWebhookSecrets(read, 'STRIPE_WEBHOOK_SECRETS'),
    liveKey: liveKey?.value ?? null,
    liveWebhookSecrets: readWebhookSecrets(read, 'STRIPE_LIVE_WEBHOOK_SECRETS'),
  };
}

function readWebhookSecrets(read: EnvReader, name: string): string[] {
  const secrets = (read.raw(name) ?? '').split(',').map((s) => s.trim()).filter(Boolean);
  if (secrets.some((secret) => !/^whsec_\S+$/.test(secret))) read.refuse(name, 'must be whsec_... secrets separated by commas', null);
  return secrets;
}

function absoluteOrNull(path: string | null): string | null {
  return path === null ? null : resolve(path);
}

/**
 * Parse the environment once, at start: every variable the server reads is here, with its
 * default, and a bad value is refused by name rather than turned into NaN or a surprise later.
 * `main.ts` hands it the process's environment; no other module of the server reads it.
 */
export function parseEnv(env: RawEnv): InterlockEnv {
  const read = new EnvReader(env);
  const dataDir = resolve(read.raw('DATA_DIR') ?? 'data');
  const dbPath = read.raw('DB_PATH');
  const credentialsDirectory = absoluteOrNull(read.raw('CREDENTIALS_DIRECTORY'));
  const stripe = readStripeSecrets(read, credentialsDirectory);
  const database = readDatabaseUrls(read);
  const parsed: InterlockEnv = {
    port: read.port('PORT', 3000),
    host: read.raw('HOST') ?? '127.0.0.1',
    dataDir,
    dbPath: dbPath === null ? join(dataDir, 'interlock.sqlite') : resolve(dbPath),
    databaseUrl: database.url,
    databaseMigrateUrl: database.migrateUrl,
    databaseListenUrl: database.listenUrl,
    databasePoolMax: read.raw('DATABASE_POOL_MAX') === null ? null : read.wholeNumber('DATABASE_POOL_MAX', 0, 1, 1_000, 'must be a whole number of connections from 1 to 1000'),
    receiptKeyPath: absoluteOrNull(read.raw('RECEIPT_KEY_PATH')),
    credentialsDirectory,
    sandboxPort: read.port('SANDBOX_PORT', 12_111),
    stripeSecretKey: stripe.key,
    stripeWebhookSecrets: stripe.webhookSecrets,
    stripeLiveKey: stripe.liveKey,
    stripeLiveWebhookSecrets: stripe.liveWebhookSecrets,
    stripeSandboxUrl: readSandboxUrl(read),
    configPath: read.raw('INTERLOCK_CONFIG') ?? DEFAULT_CONFIG_PATH,
    killAt: readKillPoints(read),
    claimTtlMs: read.raw('INTERLOCK_CLAIM_TTL_MS') === null ? null : read.wholeNumber('INTERLOCK_CLAIM_TTL_MS', 0, 1, Number.MAX_SAFE_INTEGER, 'must be a whole number of ms, 1 or more'),
    reconcileMs: read.wholeNumber('INTERLOCK_RECONCILE_MS', 60_000, RECONCILE_MS_MIN, Number.MAX_SAFE_INTEGER, `must be a whole number of ms, ${RECONCILE_MS_MIN} or more`),
    sandboxDemo: read.oneOf('SANDBOX_DEMO', ['0', '1'], '1') === '1',
    sandboxRateLimits: read.oneOf('SANDBOX_RATE_LIMITS', RATE_LIMIT_MODES, 'test'),
    demo: read.raw('INTERLOCK_DEMO') === null ? null : read.oneOf('INTERLOCK_DEMO', ['0', '1'], '0') === '1',
    logLevel: read.oneOf('LOG_LEVEL', LOG_LEVELS, 'info'),
    secrets: env,
  };
  if (read.problems.length > 0) throw new EnvError(read.problems.join('; '));
  return parsed;
}

/** Where the environment keeps everything: the PostgreSQL database of `DATABASE_URL` when it is set, else the SQLite file of `DB_PATH`. */
export function storagePlace(env: Pick<InterlockEnv, 'dbPath' | 'databaseUrl' | 'databaseMigrateUrl'> & Partial<Pick<InterlockEnv, 'databaseListenUrl' | 'databasePoolMax'>>): StoragePlace {
  if (env.databaseUrl === null) return { kind: 'sqlite', file: env.dbPath };
  const place = { kind: 'postgresql', url: env.databaseUrl, migrateUrl: env.databaseMigrateUrl ?? env.databaseUrl, listenUrl: env.databaseListenUrl ?? env.databaseUrl } as const;
  return env.databasePoolMax === undefined || env.databasePoolMax === null ? place : { ...place, poolMax: env.databasePoolMax };
}
