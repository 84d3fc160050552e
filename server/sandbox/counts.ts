import type { OperationName } from './operations.ts';

/**
 * What the sandbox answered a request to `/v1/...`, each counted once: it went through to the
 * endpoint (whatever the endpoint answered), the rate limiter refused it (429 `rate_limit`, a
 * `error_429` fault included), it met a held lock (429 `lock_timeout`), or its key was refused (401).
 */
export const REQUEST_OUTCOMES = ['through', 'rate_limited', 'lock_timeout', 'unauthorized'] as const;
export type RequestOutcome = (typeof REQUEST_OUTCOMES)[number];

/** How many requests came to each outcome. */
export type OutcomeCounts = Record<RequestOutcome, number>;

/** The requests the sandbox answered since it started (or was reset): in all, and per endpoint that had any. */
export interface RequestCounts {
  total: OutcomeCounts;
  endpoints: Partial<Record<OperationName, OutcomeCounts>>;
}

/** Counts of answered requests, so tests and the bench count Stripe calls where Stripe would. */
export class RequestCounter {
  private total = noCounts();
  private readonly byEndpoint = new Map<OperationName, OutcomeCounts>();

  record(operation: OperationName, outcome: RequestOutcome): void {
    const counts = this.byEndpoint.get(operation) ?? noCounts();
    counts[outcome] += 1;
    this.byEndpoint.set(operation, counts);
    this.total[outcome] += 1;
  }

  /** A copy of the counts now. */
  view(): RequestCounts {
    const endpoints: RequestCounts['endpoints'] = {};
    for (const [operation, counts] of this.byEndpoint) endpoints[operation] = { ...counts };
    return { total: { ...this.total }, endpoints };
  }

  reset(): void {
    this.total = noCounts();
    this.byEndpoint.clear();
  }
}

function noCounts(): OutcomeCounts {
  return { through: 0, rate_limited: 0, lock_timeout: 0, unauthorized: 0 };
}
