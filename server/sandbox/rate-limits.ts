import { sandboxLimits } from './limits.ts';
import type { OperationName } from './operations.ts';

/**
 * Which of Stripe's published limits the sandbox holds: none (`off`, what it always did), test
 * mode's (25 operations a second for the account, 25 for each endpoint) or live mode's (100 for
 * the account, 25 for each endpoint).
 */
export const RATE_LIMIT_MODES = ['off', 'test', 'live'] as const;
export type RateLimitMode = (typeof RATE_LIMIT_MODES)[number];

/** Requests a window may let through, for the account and for each endpoint. */
interface Allowance {
  global: number;
  endpoint: number;
}

const ALLOWANCES: Record<Exclude<RateLimitMode, 'off'>, Allowance> = {
  test: { global: sandboxLimits.testOperationsPerSecond, endpoint: sandboxLimits.endpointRequestsPerSecond },
  live: { global: sandboxLimits.liveOperationsPerSecond, endpoint: sandboxLimits.endpointRequestsPerSecond },
};

/**
 * Stripe's rate limits as a sliding one-second window on the sandbox clock: a request goes
 * through when fewer than the allowance went through in the second before it, for the account
 * and for its endpoint; then it counts in both. A refused request counts in neither, as a token
 * limiter spends nothing on a refusal. Sliding is the strict reading of "N a second": no second,
 * wherever it starts, lets more than N through, where fixed windows let 2N through across a
 * boundary and a full token bucket lets its burst and a second's refill through together. Each
 * log holds at most its allowance of times, so memory stays bounded.
 */
export class RateLimiter {
  private mode: RateLimitMode;
  private readonly accountLog: number[] = [];
  private readonly endpointLogs = new Map<OperationName, number[]>();

  constructor(mode: RateLimitMode) {
    this.mode = mode;
  }

  /** The limits in force. */
  current(): RateLimitMode {
    return this.mode;
  }

  /** Hold other limits from now on; what went through before is forgotten. */
  setMode(mode: RateLimitMode): void {
    this.mode = mode;
    this.accountLog.length = 0;
    this.endpointLogs.clear();
  }

  /** True when a request to `operation` at `nowMs` may go through (and it is then counted); false for a 429. */
  admit(operation: OperationName, nowMs: number): boolean {
    if (this.mode === 'off') return true;
    const allowance = ALLOWANCES[this.mode];
    const endpointLog = this.endpointLogs.get(operation) ?? [];
    const sinceMs = nowMs - sandboxLimits.rateLimitWindowMs;
    forgetUpTo(this.accountLog, sinceMs);
    forgetUpTo(endpointLog, sinceMs);
    if (this.accountLog.length >= allowance.global || endpointLog.length >= allowance.endpoint) return false;
    this.accountLog.push(nowMs);
    endpointLog.push(nowMs);
    this.endpointLogs.set(operation, endpointLog);
    return true;
  }
}

/** Drop the times at or before `sinceMs` from a log kept oldest first. */
function forgetUpTo(log: number[], sinceMs: number): void {
  let expired = 0;
  while (expired < log.length && log[expired]! <= sinceMs) expired += 1;
  log.splice(0, expired);
}
