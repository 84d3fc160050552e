import { limits } from '../../shared/limits.ts';
import { BoundedStore } from '../../shared/bounded-store.ts';
import { type Bucket, type RateRule, shareOf, takeToken } from './rate.ts';

/**
 * One rate (rate.ts) for many keys, each with a bucket of its own, in a bounded store. Where
 * several servers enforce the rate together, each enforces its share (`shareOf`), by the count of
 * live servers `servers` gives at each request, so a change of the count applies at once.
 */
export class RateLimiter {
  readonly #buckets = new BoundedStore<Bucket>(limits.throttleEntriesMax);

  constructor(
    private readonly rule: RateRule,
    private readonly wallMs: () => number,
    private readonly servers: () => number = () => 1,
  ) {}

  /** Take a token for `key`: null when the request may go on, else the ms until it may. */
  take(key: string): number | null {
    const verdict = takeToken(this.#buckets.get(key), this.wallMs(), shareOf(this.rule, this.servers()));
    this.#buckets.set(key, verdict.bucket);
    return verdict.kind === 'go' ? null : verdict.waitMs;
  }
}
