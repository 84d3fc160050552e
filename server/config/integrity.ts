import { toolCommand } from '../tools.ts';
import { type Checker, keyPath, type Mapping } from './check.ts';
import type { ConfigEnv, NotificationsReader } from './notifications.ts';
import type { IntegrityConfig, MirrorConfig } from './schema.ts';
import { isSha256Hex } from './secrets.ts';

export type { IntegrityConfig, MirrorConfig } from './schema.ts';

// `integrity`: how often the journal's global chain is signed as a checkpoint, where copies of the
// checkpoints go (mirrors the server's own user cannot rewrite), and who may read the latest one.

export const INTEGRITY_DEFAULTS = {
  checkpointEveryEntries: 1_000,
  checkpointEverySeconds: 60,
  tailVerifySeconds: 300,
  wholePassSeconds: 3_600,
} as const;

const KEYS = ['checkpoint_every_entries', 'checkpoint_every_seconds', 'mirrors', 'checkpoint_public', 'checkpoint_token_sha256', 'tail_verify_seconds', 'whole_pass_seconds'] as const;
/** A handful of copies is the point; dozens is a mistake (each is written every checkpoint). */
const MIRRORS_MAX = 8;
/** A day: no checkpoint or re-verification should wait longer. */
const SECONDS_MAX = 86_400;
const ENTRIES_MAX = 1_000_000;
/** A week: the longest a whole journal goes without its background pass, unless turned off. */
const WEEK_SECONDS = 604_800;

export function readIntegrity(c: Checker, value: unknown, reader: NotificationsReader): IntegrityConfig {
  const raw: Mapping = value === undefined || value === null ? {} : c.mapping(value, 'integrity', KEYS);
  const whole = (key: string, fallback: number, max: number): number => {
    const given = raw[key];
    if (given === undefined) return fallback;
    if (typeof given !== 'number' || !Number.isSafeInteger(given) || given < 1 || given > max) {
      const orOff = key === 'whole_pass_seconds' ? ', or false for off' : '';
      c.fail(`integrity.${key}`, `must be a whole number from 1 to ${max}${orOff}, got ${String(given)}`);
    }
    return given;
  };
  const token = raw.checkpoint_token_sha256;
  if (token !== undefined && token !== null && !isSha256Hex(token)) {
    c.fail('integrity.checkpoint_token_sha256', `must be 64 lowercase hex characters, the SHA-256 of the token (make one with \`${toolCommand('hash-secret', 'token <token>')}\`)`);
  }
  return {
    checkpointEveryEntries: whole('checkpoint_every_entries', INTEGRITY_DEFAULTS.checkpointEveryEntries, ENTRIES_MAX),
    checkpointEveryMs: whole('checkpoint_every_seconds', INTEGRITY_DEFAULTS.checkpointEverySeconds, SECONDS_MAX) * 1000,
    mirrors: readMirrors(c, raw.mirrors, reader),
    checkpointPublic: raw.checkpoint_public === undefined ? false : c.boolean(raw.checkpoint_public, 'integrity.checkpoint_public'),
    checkpointTokenSha256: typeof token === 'string' ? token : null,
    tailVerifyMs: whole('tail_verify_seconds', INTEGRITY_DEFAULTS.tailVerifySeconds, SECONDS_MAX) * 1000,
    // false turns the background pass over the whole journal off; a period runs it that long after the last one ended.
    wholePassMs: raw.whole_pass_seconds === false ? null : whole('whole_pass_seconds', INTEGRITY_DEFAULTS.wholePassSeconds, WEEK_SECONDS) * 1000,
  };
}

/** The stable name of the refusal of a file mirror only one host sees, on a database several servers share. */
export const MIRROR_NOT_SHARED = 'mirror_not_shared';

const NOT_SHARED =
  `${MIRROR_NOT_SHARED}: DATABASE_URL is set, so several servers may share this journal, and a file on one host holds only the checkpoints of the server on that host; ` +
  'a start or restore on another host would be checked against none of them. Use a url mirror, or a file on a mount every server sees, marked shared: true';

function readMirrors(c: Checker, value: unknown, reader: NotificationsReader): MirrorConfig[] {
  if (value === undefined || value === null) return [];
  // With DATABASE_URL set the journal lives in PostgreSQL, where several servers may share it (server/config/env.ts).
  const onPostgres = (reader.env.DATABASE_URL ?? '') !== '';
  const items = c.list(value, 'integrity.mirrors');
  if (items.length > MIRRORS_MAX) c.fail('integrity.mirrors', `at most ${MIRRORS_MAX} mirrors`);
  const seen = new Set<string>();
  return items.map((item, i): MirrorConfig => {
    const path = `integrity.mirrors[${i}]`;
    const raw = c.mapping(item, path, ['file', 'shared', 'url', 'token_env', 'token_file', 'token']);
    if ((raw.file === undefined) === (raw.url === undefined)) c.fail(path, 'give file (a file each checkpoint is appended to) or url (where each checkpoint is PUT), one of them');
    let mirror: MirrorConfig;
    if (raw.file !== undefined) {
      if (raw.token_env !== undefined || raw.token_file !== undefined || raw.token !== undefined) c.fail(keyPath(path, 'token_env'), 'a file mirror takes no token');
      const file = c.string(raw.file, keyPath(path, 'file'));
      if (!file.startsWith('/')) c.fail(keyPath(path, 'file'), 'must be an absolute path, outside the data folder');
      const shared = raw.shared === undefined ? false : c.boolean(raw.shared, keyPath(path, 'shared'));
      if (onPostgres && !shared) c.fail(keyPath(path, 'file'), NOT_SHARED, MIRROR_NOT_SHARED);
      mirror = shared ? { kind: 'file', path: file, shared } : { kind: 'file', path: file };
    } else {
      if (raw.shared !== undefined) c.fail(keyPath(path, 'shared'), 'is for a file mirror: a URL mirror is one place every server reaches');
      const field = keyPath(path, 'url');
      const url = reader.url(c.string(raw.url, field), field, null);
      const token = reader.optionalSecret(raw, path, 'token');
      mirror = { kind: 'url', url, token: token?.value ?? null };
    }
    const name = mirror.kind === 'file' ? mirror.path : mirror.url;
    if (seen.has(name)) c.fail(path, `${name} is named twice`);
    seen.add(name);
    return mirror;
  });
}

/** How a mirror is named in logs and messages: its path, or its URL without credentials or query. */
export function mirrorName(mirror: MirrorConfig): string {
  if (mirror.kind === 'file') return mirror.path;
  const url = new URL(mirror.url);
  return `${url.origin}${url.pathname}`;
}

export type { ConfigEnv };
