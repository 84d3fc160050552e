/**
 * How the client waits for a decision: pure functions of the previous delay, the deadline and
 * what the server said, so the schedule can be tested without waiting.
 */

/** The poller's bounds, each with why it is what it is. */
export const pollLimits = {
  /** The first wait: a routine refund settles in well under a second, a person takes minutes. */
  firstDelayMs: 1_000,
  /** Waits double up to this, so a request a person decides hours later costs two polls a minute. */
  delayMsMax: 30_000,
  /** How long `waitForDecision` waits unless told otherwise. */
  timeoutMsDefault: 60_000,
  /**
   * The share of a backoff delay taken off at random before each sleep: agents that started
   * together (a burst, a restart) spread their polls instead of reading in step.
   */
  jitterShare: 0.2,
  /** How long one HTTP call may take before it is given up (TimeoutError); the server answers a refund within 10 s. */
  callTimeoutMsDefault: 30_000,
} as const;

/**
 * A backoff delay with jitter: `delayMs` less up to `pollLimits.jitterShare` of it, by `random()`
 * in [0, 1): never longer than the backoff, never less than 80 % of it.
 */
export function jitteredDelayMs(delayMs: number, random: () => number): number {
  const share = Math.min(Math.max(random(), 0), 1);
  return Math.round(delayMs * (1 - pollLimits.jitterShare * share));
}

/** The wait after `previousMs`: the first delay, then double, at most `pollLimits.delayMsMax`. */
export function nextDelayMs(previousMs: number | null): number {
  return previousMs === null ? pollLimits.firstDelayMs : Math.min(previousMs * 2, pollLimits.delayMsMax);
}

/** `Retry-After` in whole or decimal seconds. */
const SECONDS = /^\d+(\.\d+)?$/;
/** An HTTP date names a day or a month in letters, which a bare number never does. */
const HAS_LETTERS = /[A-Za-z]/;

/**
 * A `Retry-After` header in ms from `nowMs`: seconds (`120`) or an HTTP date
 * (`Wed, 21 Oct 2015 07:28:00 GMT`, never less than 0); null when absent or unreadable.
 */
export function parseRetryAfterMs(header: string | null, nowMs: number): number | null {
  if (header === null) return null;
  const text = header.trim();
  if (SECONDS.test(text)) {
    const ms = Math.ceil(Number(text) * 1000);
    return Number.isSafeInteger(ms) ? ms : null;
  }
  if (!HAS_LETTERS.test(text)) return null;
  const atMs = Date.parse(text);
  return Number.isNaN(atMs) ? null : Math.max(0, atMs - nowMs);
}

/**
 * How long to sleep before the next poll: the backoff delay, or longer when the server's
 * `Retry-After` asks for longer (it is the least a client must wait); never past the deadline.
 */
export function sleepMsBeforeNextPoll(delayMs: number, retryAfterMs: number | null, remainingMs: number): number {
  return Math.max(0, Math.min(Math.max(delayMs, retryAfterMs ?? 0), remainingMs));
}
