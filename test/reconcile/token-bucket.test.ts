import { describe, expect, it } from 'vitest';
import { limits } from '../../shared/limits.ts';
import { TokenBucket } from '../../server/reconcile/token-bucket.ts';
import { busiestWindow, fakePacingClock } from './support.ts';

describe('token bucket (on an injected clock)', () => {
  it('the reconciliation rate lets at most 20 calls through in any one-second window, and 100 calls take about 6 s', async () => {
    const clock = fakePacingClock();
    const bucket = new TokenBucket({ burst: limits.reconcileListBurst, perSecond: limits.reconcileListsPerSecond }, clock);
    const times: number[] = [];
    for (let i = 0; i < 100; i++) {
      await bucket.take();
      times.push(clock.nowMs());
    }
    expect(busiestWindow(times)).toBeLessThanOrEqual(20);
    // Not slower than it must be: the burst at once, then 15 a second.
    expect(times.at(-1)! - times[0]!).toBeLessThanOrEqual(Math.ceil(((100 - limits.reconcileListBurst) * 1000) / limits.reconcileListsPerSecond) + 100);
    expect(times.slice(0, limits.reconcileListBurst).every((t) => t === times[0])).toBe(true);
  });

  it('a bucket of 20 refilled at 20 a second lets 40 through in some second: why the rate is 5 + 15', async () => {
    const clock = fakePacingClock();
    const bucket = new TokenBucket({ burst: 20, perSecond: 20 }, clock);
    const times: number[] = [];
    for (let i = 0; i < 60; i++) {
      await bucket.take();
      times.push(clock.nowMs());
    }
    expect(busiestWindow(times)).toBeGreaterThan(20);
  });

  it('after a quiet spell it holds no more than its burst', async () => {
    const clock = fakePacingClock();
    const bucket = new TokenBucket({ burst: 5, perSecond: 15 }, clock);
    await clock.sleep(60_000);
    clock.slept.length = 0;
    for (let i = 0; i < 5; i++) await bucket.take();
    expect(clock.slept).toEqual([]);
    await bucket.take();
    expect(clock.slept.length).toBe(1);
  });

  it('callers at once are served in turn, none overtaking another', async () => {
    const clock = fakePacingClock();
    const bucket = new TokenBucket({ burst: 1, perSecond: 10 }, clock);
    const order: number[] = [];
    await Promise.all([0, 1, 2, 3, 4].map((n) => bucket.take().then(() => order.push(n))));
    expect(order).toEqual([0, 1, 2, 3, 4]);
  });
});
