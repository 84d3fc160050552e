import { toolCommand } from '../tools.ts';
import { type Checker, describeValue, type Mapping } from './check.ts';
import { readProxyAddress } from './network.ts';
import type { MetricsConfig } from './schema.ts';
import { isSha256Hex } from './secrets.ts';

/** Scraped from the machine itself only, unless the file says more: a scraper elsewhere brings a token or is named. */
export const METRICS_DEFAULTS: MetricsConfig = { allowFrom: ['loopback'], tokenSha256: null };

/**
 * `metrics`: who may scrape `GET /metrics`. `allow_from` lists addresses, CIDR ranges or named
 * ranges (loopback, linklocal, uniquelocal) scraped from without a token, judged on the client's
 * address as `trust_proxy` reads it; `token_sha256` is a bearer token's SHA-256 that may scrape
 * from anywhere. An empty `allow_from` with no token would answer no one, and is refused.
 */
export function readMetrics(c: Checker, value: unknown): MetricsConfig {
  if (value === undefined || value === null) return METRICS_DEFAULTS;
  const raw: Mapping = c.mapping(value, 'metrics', ['allow_from', 'token_sha256']);
  const token = raw.token_sha256;
  if (token !== undefined && token !== null && !isSha256Hex(token)) {
    c.fail('metrics.token_sha256', `must be 64 lowercase hex characters, the SHA-256 of the token (make one with \`${toolCommand('hash-secret', 'token <token>')}\`)`);
  }
  let allowFrom = METRICS_DEFAULTS.allowFrom;
  if (raw.allow_from !== undefined) {
    if (!Array.isArray(raw.allow_from)) c.fail('metrics.allow_from', `must be a list of addresses, CIDR ranges or named ranges (loopback); got ${describeValue(raw.allow_from)}`);
    allowFrom = c.distinct(raw.allow_from, 'metrics.allow_from', (item, path) => readProxyAddress(c, item, path, 'scraper'));
  }
  const tokenSha256 = typeof token === 'string' ? token : null;
  if (allowFrom.length === 0 && tokenSha256 === null) c.fail('metrics', 'allow_from is empty and there is no token_sha256: no one could scrape the metrics');
  return { allowFrom, tokenSha256 };
}
