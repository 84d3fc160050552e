import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { ConfigError, parseConfig } from '../../server/config/load.ts';
import { buildFileConfig } from './support.ts';

// `integrity`: how often checkpoints are signed, where their copies go, who may read the latest.

function parse(integrity: unknown, env: Record<string, string> = {}) {
  return parseConfig(stringify({ ...buildFileConfig(), integrity }), 'interlock.yaml', env).integrity;
}

function refusal(integrity: unknown): string {
  try {
    parse(integrity);
  } catch (error) {
    if (error instanceof ConfigError) return error.message;
    throw error;
  }
  throw new Error('the config was accepted');
}

describe('integrity config', () => {
  it('defaults: a checkpoint every 1,000 entries or 60 s, no mirror, the checkpoint not public', () => {
    expect(parse(undefined)).toEqual({
      checkpointEveryEntries: 1_000,
      checkpointEveryMs: 60_000,
      mirrors: [],
      checkpointPublic: false,
      checkpointTokenSha256: null,
      tailVerifyMs: 300_000,
      wholePassMs: 3_600_000,
    });
  });

  it('the background pass over the whole journal: a period in seconds, or false for none', () => {
    expect(parse({ whole_pass_seconds: 600 }).wholePassMs).toBe(600_000);
    expect(parse({ whole_pass_seconds: false }).wholePassMs).toBeNull();
  });

  it('reads file and URL mirrors, a URL mirror’s token from the environment', () => {
    const read = parse(
      {
        checkpoint_every_entries: 50,
        checkpoint_every_seconds: 10,
        mirrors: [{ file: '/var/lib/interlock-mirror/checkpoints.jsonl' }, { url: 'https://mirror.example/interlock', token_env: 'MIRROR_TOKEN' }],
        checkpoint_public: true,
      },
      { MIRROR_TOKEN: 'mirror-secret-token' },
    );
    expect(read.mirrors).toEqual([
      { kind: 'file', path: '/var/lib/interlock-mirror/checkpoints.jsonl' },
      { kind: 'url', url: 'https://mirror.example/interlock', token: 'mirror-secret-token' },
    ]);
    expect(read).toMatchObject({ checkpointEveryEntries: 50, checkpointEveryMs: 10_000, checkpointPublic: true });
  });

  it.each([
    [{ checkpoint_every_entries: 0 }, 'integrity.checkpoint_every_entries: must be a whole number from 1 to 1000000'],
    [{ checkpoint_every_seconds: 1.5 }, 'integrity.checkpoint_every_seconds: must be a whole number'],
    [{ mirrors: [{ file: 'relative/path' }] }, 'must be an absolute path'],
    [{ mirrors: [{ file: '/a', url: 'https://x.example/' }] }, 'give file'],
    [{ mirrors: [{ file: '/a' }, { file: '/a' }] }, '/a is named twice'],
    [{ mirrors: [{ file: '/a', token_env: 'X' }] }, 'a file mirror takes no token'],
    [{ checkpoint_token_sha256: 'abc' }, 'integrity.checkpoint_token_sha256: must be 64 lowercase hex characters'],
    [{ checkpoint_public: 'yes' }, 'integrity.checkpoint_public'],
    [{ witnesses: [] }, 'witnesses'],
    [{ whole_pass_seconds: 0 }, 'integrity.whole_pass_seconds: must be a whole number from 1 to 604800, or false for off, got 0'],
    [{ whole_pass_seconds: true }, 'integrity.whole_pass_seconds: must be a whole number from 1 to 604800, or false for off, got true'],
  ])('%j is refused by name: %s', (integrity, says) => {
    expect(refusal(integrity)).toContain(says);
  });
});

describe('file mirrors when DATABASE_URL is set: several servers may share the journal', () => {
  const PG = { DATABASE_URL: 'postgresql://interlock_app@db.internal/interlock' };
  const FILE = '/var/lib/interlock-mirror/checkpoints.jsonl';

  it('a file mirror not marked shared is refused at its field, with the stable reason mirror_not_shared', () => {
    let refused: unknown;
    try {
      parse({ mirrors: [{ url: 'https://mirror.example/interlock' }, { file: FILE }] }, PG);
    } catch (error) {
      refused = error;
    }
    expect(refused).toBeInstanceOf(ConfigError);
    const error = refused as ConfigError;
    expect({ code: error.code, reason: error.reason, field: error.field }).toEqual({ code: 'config_invalid', reason: 'mirror_not_shared', field: 'integrity.mirrors[1].file' });
    expect(error.message).toContain('mirror_not_shared: DATABASE_URL is set, so several servers may share this journal');
    expect(error.message).toContain('marked shared: true');
    expect(() => parse({ mirrors: [{ file: FILE, shared: false }] }, PG)).toThrow(/mirror_not_shared/);
  });

  it('a URL mirror, and a file marked shared: true (a mount every server sees), are kept', () => {
    const read = parse({ mirrors: [{ url: 'https://mirror.example/interlock' }, { file: FILE, shared: true }] }, PG);
    expect(read.mirrors).toEqual([
      { kind: 'url', url: 'https://mirror.example/interlock', token: null },
      { kind: 'file', path: FILE, shared: true },
    ]);
  });

  it('without DATABASE_URL (one server, its SQLite file) a file mirror needs no mark; shared is a boolean, and only for a file', () => {
    expect(parse({ mirrors: [{ file: FILE }] }, { DATABASE_URL: '' }).mirrors).toEqual([{ kind: 'file', path: FILE }]);
    expect(parse({ mirrors: [{ file: FILE, shared: true }] }).mirrors).toEqual([{ kind: 'file', path: FILE, shared: true }]);
    expect(refusal({ mirrors: [{ file: FILE, shared: 'yes' }] })).toContain('integrity.mirrors[0].shared');
    expect(refusal({ mirrors: [{ url: 'https://mirror.example/interlock', shared: true }] })).toContain('integrity.mirrors[0].shared: is for a file mirror');
  });
});
