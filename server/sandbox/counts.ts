import { sandboxLimits } from './limits.ts';
import type { OperationName } from './operations.ts';

/**
 * What the sandbox answered a request to `/v1/...`, each counted once: it went through to the
 * endpoint (whatever the endpoint answered), the rate limiter refused it (429 `rate_limit`, a
 * `error_429` fault included), it met a held lock (429 `lock_timeout`), its key was refused (401),
 * or its restricted key lacked the permission (403).
 */
export const REQUEST_OUTCOMES = ['through', 'rate_limited', 'lock_timeout', 'unauthorized', 'forbidden'] as const;
export type RequestOutcome = (typeof REQUEST_OUTCOMES)[number];

/** How many requests came to each outcome. */
export type OutcomeCounts = Record<RequestOutcome, number>;

/** One request as it arrived: when (sandbox clock, ms), at which endpoint, and what it came to. */
export interface RequestArrival {
  atMs: number;
  operation: OperationName;
  outcome: RequestOutcome;
}

/**
 * The requests the sandbox answered since it started (or was reset): in all, per endpoint that had
 * any, and each one's arrival, oldest first (the last `requestArrivalsKeptMax`), so a test can
 * count what reached Stripe in any second.
 */
export interface RequestCounts {
  total: OutcomeCounts;
  endpoints: Partial<Record<OperationName, OutcomeCounts>>;
  arrivals: RequestArrival[];
}

/** Counts of answered requests, so tests and the bench count Stripe calls where Stripe would. */
export class RequestCounter {
  private total = noCounts();
  private readonly byEndpoint = new Map<OperationName, OutcomeCounts>();
  private arrivals: RequestArrival[] = [];

  record(operation: OperationName, outcome: RequestOutcome, arrivedMs: number): void {
    const counts = this.byEndpoint.get(operation) ?? noCounts();
    counts[outcome] += 1;
    this.byEndpoint.set(operation, counts);
    this.total[outcome] += 1;
    this.arrivals.push({ atMs: arrivedMs, operation, outcome });
    if (this.arrivals.length > sandboxLimits.requestArrivalsKeptMax) this.arrivals.splice(0, this.arrivals.length - sandboxLimits.requestArrivalsKeptMax);
  }

  /** A copy of the counts now. */
  view(): RequestCounts {
    const endpoints: RequestCounts['endpoints'] = {};
    for (const [operation, counts] of this.byEndpoint) endpoints[operation] = { ...counts };
    return { total: { ...this.total }, endpoints, arrivals: this.arrivals.map((a) => ({ ...a })) };
  }

  reset(): void {
    this.total = noCounts();
    this.byEndpoint.clear();
    this.arrivals = [];
  }
}

function noCounts(): OutcomeCounts {
  return { through: 0, rate_limited: 0, lock_timeout: 0, unauthorized: 0, forbidden: 0 };
}
