/** The time a bucket reads and waits on: the real one in the server, a fake one in tests. */
export interface PacingClock {
  nowMs(): number;
  sleep(ms: number): Promise<void>;
}

/** Real time: `Date.now` and a timer. */
export const REAL_PACING_CLOCK: PacingClock = {
  nowMs: () => Date.now(),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
};

/** How fast a bucket lets calls through. */
export interface BucketRate {
  /** Tokens it holds at most: the burst allowed after a quiet spell. */
  burst: number;
  /** Tokens added per second. */
  perSecond: number;
}

/**
 * A token bucket: each call takes a token, waiting for one when the bucket is empty. Over any
 * window of `w` seconds it lets at most `burst + perSecond * w` calls through, so a rate whose
 * `burst + perSecond` is 20 keeps every one-second window at 20 calls or fewer. Callers take
 * tokens one at a time, in turn (a waiter is never overtaken).
 */
export class TokenBucket {
  #tokens: number;
  #lastMs: number;
  #turn: Promise<void> = Promise.resolve();

  constructor(
    private readonly rate: BucketRate,
    private readonly clock: PacingClock = REAL_PACING_CLOCK,
  ) {
    if (!(rate.burst >= 1 && Number.isInteger(rate.burst))) throw new RangeError('a bucket holds at least one whole token');
    if (!(rate.perSecond > 0)) throw new RangeError('a bucket must refill');
    this.#tokens = rate.burst;
    this.#lastMs = clock.nowMs();
  }

  /** Wait for a token and take it. */
  take(): Promise<void> {
    const mine = this.#turn.then(() => this.#takeNow());
    // The next caller waits for this one, whether it waited or not.
    this.#turn = mine;
    return mine;
  }

  /**
   * Take a token if one is there now, never waiting: for a caller that would rather do without
   * (a display read) than queue. Only on a bucket nobody waits on with `take`, whose turns it would skip.
   */
  tryTake(): boolean {
    this.#refill();
    if (this.#tokens < 1) return false;
    this.#tokens -= 1;
    return true;
  }

  async #takeNow(): Promise<void> {
    for (;;) {
      this.#refill();
      if (this.#tokens >= 1) {
        this.#tokens -= 1;
        return;
      }
      const waitMs = Math.ceil(((1 - this.#tokens) * 1000) / this.rate.perSecond);
      await this.clock.sleep(waitMs);
    }
  }

  #refill(): void {
    const nowMs = this.clock.nowMs();
    const elapsedMs = Math.max(0, nowMs - this.#lastMs);
    this.#lastMs = nowMs;
    this.#tokens = Math.min(this.rate.burst, this.#tokens + (elapsedMs * this.rate.perSecond) / 1000);
  }
}
