import { limits } from '../../shared/limits.ts';
import { BoundedStore } from './bounded-store.ts';
import { type Bucket, type RateRule, takeToken } from './rate.ts';

/** One rate (rate.ts) for many keys, each with a bucket of its own, in a bounded store. */
export class RateLimiter {
  readonly #buckets = new BoundedStore<Bucket>(limits.throttleEntriesMax);

  constructor(
    private readonly rule: RateRule,
    private readonly wallMs: () => number,
  ) {}

  /** Take a token for `key`: null when the request may go on, else the ms until it may. */
  take(key: string): number | null {
    const verdict = takeToken(this.#buckets.get(key), this.wallMs(), this.rule);
    this.#buckets.set(key, verdict.bucket);
    return verdict.kind === 'go' ? null : verdict.waitMs;
  }
}
