// Agents' request rates, decided on values: a token bucket per agent token and per address,
// refilled continuously. The shell (rate-limiter.ts) keeps the buckets; this only computes.

/** A request rate: `burst` requests at once after a quiet spell, `perSecond` sustained. */
export interface RateRule {
  burst: number;
  perSecond: number;
}

/** One bucket: the tokens it held at `atMs`. */
export interface Bucket {
  tokens: number;
  atMs: number;
}

/** Whether a request may go on, the bucket to keep, and how long to wait when it may not. */
export type RateVerdict = { kind: 'go'; bucket: Bucket } | { kind: 'wait'; bucket: Bucket; waitMs: number };

/**
 * One server's share of a rate that `servers` servers enforce together: the sustained rate and the
 * burst each divided among them (a burst never below one request, or nothing would pass). Over any
 * span, the servers together then let through at most the rate's requests and one burst (or one
 * request a server, when there are more servers than the burst), however an agent spreads its
 * requests among them. One server keeps the rate as it is.
 */
export function shareOf(rule: RateRule, servers: number): RateRule {
  if (!(servers > 1)) return rule;
  return { perSecond: rule.perSecond / servers, burst: Math.max(1, rule.burst / servers) };
}

/** A bucket as it stands at `nowMs`: full when new, refilled at the rule's rate up to its burst. */
export function bucketAt(bucket: Bucket | undefined, nowMs: number, rule: RateRule): Bucket {
  if (bucket === undefined) return { tokens: rule.burst, atMs: nowMs };
  const refilled = bucket.tokens + (Math.max(0, nowMs - bucket.atMs) * rule.perSecond) / 1000;
  return { tokens: Math.min(rule.burst, refilled), atMs: Math.max(nowMs, bucket.atMs) };
}

/** Take one token for a request at `nowMs`, or say how long until one is there. */
export function takeToken(bucket: Bucket | undefined, nowMs: number, rule: RateRule): RateVerdict {
  const now = bucketAt(bucket, nowMs, rule);
  if (now.tokens >= 1) return { kind: 'go', bucket: { tokens: now.tokens - 1, atMs: now.atMs } };
  return { kind: 'wait', bucket: now, waitMs: Math.ceil(((1 - now.tokens) * 1000) / rule.perSecond) };
}
