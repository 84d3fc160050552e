import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ConfigError, DEFAULT_CONFIG_PATH, loadConfig } from '../../server/config/load.ts';
import { isAllowedAddress, mayScrape } from '../../server/http/metrics-route.ts';
import { buildFileConfig, type FileConfig, parseFileConfig } from './support.ts';

// `metrics` in interlock.yaml: who may scrape GET /metrics. Its default, what it accepts, every
// refusal naming its field, and the address and token checks the route asks.

const TOKEN_SHA256 = 'a'.repeat(64);

function refusal(mutate: (f: FileConfig) => void): string {
  const file = buildFileConfig();
  mutate(file);
  try {
    parseFileConfig(file);
  } catch (error) {
    if (error instanceof ConfigError) return error.message;
    throw error;
  }
  throw new Error('expected a ConfigError, but the config loaded');
}

describe('metrics settings', () => {
  it('default to loopback only, with no token', () => {
    expect(loadConfig(DEFAULT_CONFIG_PATH).metrics).toEqual({ allowFrom: ['loopback'], tokenSha256: null });
  });

  it('take addresses, ranges, named ranges and a token hash', () => {
    const file = buildFileConfig();
    file.metrics = { allow_from: ['10.0.0.0/8', '192.0.2.7', 'uniquelocal'], token_sha256: TOKEN_SHA256 };
    expect(parseFileConfig(file).metrics).toEqual({ allowFrom: ['10.0.0.0/8', '192.0.2.7', 'uniquelocal'], tokenSha256: TOKEN_SHA256 });
  });

  it.each<[string, unknown, RegExp]>([
    ['an unknown key', { allow: ['loopback'] }, /metrics\.allow: unknown/],
    ['a host name', { allow_from: ['prometheus.internal'] }, /metrics\.allow_from\[0\]: .*not an IP address/],
    ['every address', { allow_from: ['loopback', '0.0.0.0/0'] }, /metrics\.allow_from\[1\]: "0\.0\.0\.0\/0" is every address: .*token_sha256/],
    ['a token in clear', { token_sha256: 'my-token' }, /metrics\.token_sha256: must be 64 lowercase hex/],
    ['no one at all', { allow_from: [] }, /metrics: allow_from is empty and there is no token_sha256/],
  ])('refuse %s, naming the field', (_what, metrics, message) => {
    expect(refusal((f) => (f.metrics = metrics))).toMatch(message);
  });
});

describe('who may scrape', () => {
  it.each<[string | undefined, readonly string[], boolean]>([
    ['127.0.0.1', ['loopback'], true],
    ['::1', ['loopback'], true],
    ['::ffff:127.0.0.1', ['loopback'], true],
    ['10.1.2.3', ['loopback'], false],
    ['10.1.2.3', ['10.0.0.0/8'], true],
    ['::ffff:10.1.2.3', ['10.0.0.0/8'], true],
    ['11.1.2.3', ['10.0.0.0/8'], false],
    ['192.0.2.7', ['192.0.2.7'], true],
    ['fd12::1', ['uniquelocal'], true],
    ['192.168.1.9', ['uniquelocal'], true],
    ['169.254.1.1', ['linklocal'], true],
    ['8.8.8.8', ['uniquelocal', 'linklocal'], false],
    ['fd12::1', ['10.0.0.0/8'], false],
    [undefined, ['loopback'], false],
  ])('%s from %j: %s', (address, allowFrom, allowed) => {
    expect(isAllowedAddress(address, allowFrom)).toBe(allowed);
  });

  it('the token lets any address scrape; a wrong one or none does not', () => {
    const config = { allowFrom: [], tokenSha256: createHash('sha256').update('scraper-token-1').digest('hex') };
    expect(mayScrape(config, '203.0.113.9', 'Bearer scraper-token-1')).toBe(true);
    expect(mayScrape(config, '203.0.113.9', 'Bearer wrong-token-0')).toBe(false);
    expect(mayScrape(config, '203.0.113.9', undefined)).toBe(false);
    expect(mayScrape({ allowFrom: [], tokenSha256: null }, '203.0.113.9', 'Bearer anything-at-all')).toBe(false);
  });
});
