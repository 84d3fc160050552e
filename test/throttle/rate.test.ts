import { describe, expect, it } from 'vitest';
import { FULL } from '../../bench/plans.ts';
import { AGENT_TOKEN } from '../../bench/http.ts';
import { CONFIG_DEFAULTS } from '../../server/config/schema.ts';
import { type Bucket, type RateRule, shareOf, takeToken } from '../../server/throttle/rate.ts';
import { RateLimiter } from '../../server/throttle/rate-limiter.ts';
import { AGENT_TOKEN as DEMO_TOKEN } from '../support/app-world.ts';

// Agents' rates on /v1 as a pure token bucket on a fake clock, and the defaults held against what
// the bench sends on one token from one address.

const T0 = 1_000_000;
const RULE: RateRule = { burst: 3, perSecond: 2 };

describe('takeToken', () => {
  it.each<[string, Bucket | undefined, number, string]>([
    ['a first request: a full bucket', undefined, T0, 'go 2'],
    ['the last token', { tokens: 1, atMs: T0 }, T0, 'go 0'],
    ['an empty bucket', { tokens: 0, atMs: T0 }, T0, 'wait 500'],
    ['a quarter of a token', { tokens: 0.25, atMs: T0 }, T0, 'wait 375'],
    ['an empty bucket 500 ms later', { tokens: 0, atMs: T0 - 500 }, T0, 'go 0'],
    ['an empty bucket an hour later holds its burst, no more', { tokens: 0, atMs: T0 - 3_600_000 }, T0, 'go 2'],
    ['a clock that went back refills nothing', { tokens: 0, atMs: T0 + 5_000 }, T0, 'wait 500'],
  ])('%s', (_case, bucket, nowMs, expected) => {
    const verdict = takeToken(bucket, nowMs, RULE);
    expect(verdict.kind === 'go' ? `go ${verdict.bucket.tokens}` : `wait ${verdict.waitMs}`).toBe(expected);
  });
});

describe('RateLimiter', () => {
  it('each key has its own bucket', () => {
    let nowMs = T0;
    const limiter = new RateLimiter(RULE, () => nowMs);
    expect([limiter.take('a'), limiter.take('a'), limiter.take('a'), limiter.take('a')]).toEqual([null, null, null, 500]);
    expect(limiter.take('b')).toBeNull();
    nowMs += 500;
    expect(limiter.take('a')).toBeNull();
  });

  it('the defaults shed none of the bench: its largest burst at once on one token and one address, each agent asking again every second', () => {
    // The bench's agents all carry the demo token, from one address (bench/http.ts).
    expect(AGENT_TOKEN).toBe(DEMO_TOKEN);
    const agents = FULL.burstRefunds.live;
    let nowMs = T0;
    const byToken = new RateLimiter(CONFIG_DEFAULTS.agentTokenRate, () => nowMs);
    const byAddress = new RateLimiter(CONFIG_DEFAULTS.agentAddressRate, () => nowMs);
    let shed = 0;
    // Settling takes 50 s at the floor; an agent asks at most once a second (Retry-After is at least 1 s).
    for (let second = 0; second < 120; second++) {
      for (let i = 0; i < agents; i++) if (byAddress.take('127.0.0.1') !== null || byToken.take('support-bot') !== null) shed += 1;
      nowMs += 1_000;
    }
    expect(shed).toBe(0);
  });

  it('the defaults shed none of the bench at its fixed rate, and stay above the throughput one server is meant to carry', () => {
    let nowMs = T0;
    const byToken = new RateLimiter(CONFIG_DEFAULTS.agentTokenRate, () => nowMs);
    let shed = 0;
    for (let ms = 0; ms < FULL.fixedMs; ms += 1) {
      nowMs += 1;
      for (let i = 0; i < FULL.fixedRatePerS / 1000; i++) if (byToken.take('support-bot') !== null) shed += 1;
    }
    expect(shed).toBe(0);
    // results/bench.md: http_refunds_per_s targets 2,000 a second.
    expect(CONFIG_DEFAULTS.agentTokenRate.perSecond).toBeGreaterThanOrEqual(2 * 2_000);
    expect(CONFIG_DEFAULTS.agentTokenRate.burst).toBeGreaterThanOrEqual(2 * FULL.burstRefunds.live);
  });
});

describe('a rate shared by the servers alive', () => {
  /** Requests `limiters` let through, one agent sending to each of them every ms for `spanMs`. */
  function hammer(limiters: RateLimiter[], clock: { nowMs: number }, spanMs: number): number[] {
    const through = limiters.map(() => 0);
    for (let ms = 0; ms < spanMs; ms++) {
      limiters.forEach((limiter, i) => {
        if (limiter.take('support-bot') === null) through[i]! += 1;
      });
      clock.nowMs += 1;
    }
    return through;
  }

  it('one server keeps the rate as it is; N servers each keep 1/N of it, the burst never below one request', () => {
    expect(shareOf(RULE, 1)).toBe(RULE);
    expect(shareOf({ burst: 100, perSecond: 40 }, 4)).toEqual({ burst: 25, perSecond: 10 });
    expect(shareOf({ burst: 3, perSecond: 2 }, 8)).toEqual({ burst: 1, perSecond: 0.25 });
  });

  it('two servers each allow half: an agent hammering both gets no more than the rate and one burst', () => {
    const rule: RateRule = { burst: 40, perSecond: 100 };
    const clock = { nowMs: T0 };
    const two = [new RateLimiter(rule, () => clock.nowMs, () => 2), new RateLimiter(rule, () => clock.nowMs, () => 2)];
    const through = hammer(two, clock, 10_000);
    expect(through).toEqual([519, 519]);
    expect(through[0]! + through[1]!).toBeLessThanOrEqual(rule.perSecond * 10 + rule.burst);
    // Alone, each server would have let the rate and a burst through: twice as much together.
    const alone = { nowMs: T0 };
    expect(hammer([new RateLimiter(rule, () => alone.nowMs), new RateLimiter(rule, () => alone.nowMs)], alone, 10_000)).toEqual([1039, 1039]);
  });

  it('the share follows the count at each request: a server joining halves it at once, one leaving doubles it', () => {
    const rule: RateRule = { burst: 10, perSecond: 100 };
    const clock = { nowMs: T0 };
    let servers = 1;
    const limiter = new RateLimiter(rule, () => clock.nowMs, () => servers);
    expect(hammer([limiter], clock, 1_000)).toEqual([109]);
    servers = 2;
    expect(hammer([limiter], clock, 1_000)).toEqual([50]);
    servers = 1;
    expect(hammer([limiter], clock, 1_000)).toEqual([100]);
  });
});
