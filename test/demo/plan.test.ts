import { Value } from 'typebox/value';
import { describe, expect, it } from 'vitest';
import { RefundRequestBodySchema } from '../../shared/schemas.ts';
import {
  DEMO_KINDS,
  type DemoKind,
  DemoPlanner,
  demoLimits,
  demoRequestBody,
  demoRequestNumber,
  firstDelayMs,
  nextDelayMs,
  tallyDemoRequests,
} from '../../server/demo/plan.ts';
import { PyRandom } from '../support/py-random.ts';

// The demo agent's requests: what it asks, how often, and how many a data folder holds.

const seeded = (seed: number) => {
  const random = new PyRandom(seed);
  return () => random.random();
};

describe('demo plans', () => {
  it('the next request comes 10 to 30 s after the last, the first 1 to 3 s after start, whatever the draw', () => {
    for (const draw of [0, 0.5, 0.999_999]) {
      expect(nextDelayMs(() => draw)).toBeGreaterThanOrEqual(10_000);
      expect(nextDelayMs(() => draw)).toBeLessThanOrEqual(30_000);
      expect(firstDelayMs(() => draw)).toBeGreaterThanOrEqual(1_000);
      expect(firstDelayMs(() => draw)).toBeLessThanOrEqual(3_000);
    }
    const random = seeded(7);
    const delays = Array.from({ length: 500 }, () => nextDelayMs(random));
    expect(Math.min(...delays)).toBeLessThan(12_000);
    expect(Math.max(...delays)).toBeGreaterThan(28_000);
  });

  it('every kind comes up in every ten requests, and a run of 200 holds each many times', () => {
    const planner = new DemoPlanner(seeded(1));
    const plans = Array.from({ length: demoLimits.requestsMax }, (_, i) => planner.plan(i + 1));
    for (let start = 1; start + 10 <= plans.length; start += 10) {
      expect(new Set(plans.slice(start, start + 10).map((p) => p.kind))).toEqual(new Set(DEMO_KINDS));
    }
    // 199 requests after the first are 19 whole rounds of 4 routine, 3 over_limit, 2 stale, 1 disputed, and 9 more.
    const count = (kind: DemoKind) => plans.filter((p) => p.kind === kind).length;
    expect([count('routine'), count('over_limit'), count('stale'), count('disputed')]).toEqual([
      expect.toSatisfy((n: number) => n >= 76 && n <= 80),
      expect.toSatisfy((n: number) => n >= 58 && n <= 61),
      expect.toSatisfy((n: number) => n >= 38 && n <= 40),
      expect.toSatisfy((n: number) => n >= 19 && n <= 20),
    ]);
  });

  it('each kind asks what its name says: routine under $50 with harmless flags, over_limit above the $50 rule, stale refunded by hand, disputed on a dispute', () => {
    const planner = new DemoPlanner(seeded(2));
    for (let n = 1; n <= demoLimits.requestsMax; n++) {
      const plan = planner.plan(n);
      expect(plan.amountCents).toBeGreaterThan(0);
      expect(plan.amountCents).toBeLessThanOrEqual(plan.paymentCents);
      expect(plan.handRefundCents !== null).toBe(plan.kind === 'stale');
      expect(plan.dispute).toBe(plan.kind === 'disputed');
      if (plan.kind === 'routine') {
        expect(plan.amountCents).toBeLessThanOrEqual(5_000);
        expect(plan.flags.filter((f) => f === 'vip' || f === 'fraud_review')).toEqual([]);
      }
      if (plan.kind === 'over_limit' || plan.kind === 'stale') expect(plan.amountCents).toBeGreaterThan(5_000);
      if (plan.kind === 'stale') expect(plan.handRefundCents!).toBeLessThan(plan.paymentCents);
      if (plan.kind === 'disputed') expect(plan.amountCents).toBeLessThanOrEqual(5_000);
    }
  });

  it('the first request of a data folder goes to a person on the default route: over $50, at most $200, no fraud flag', () => {
    for (let seed = 0; seed < 50; seed++) {
      const plan = new DemoPlanner(seeded(seed)).plan(1);
      expect(plan.kind).toBe('over_limit');
      expect(plan.amountCents).toBeGreaterThan(5_000);
      expect(plan.paymentCents).toBeLessThanOrEqual(20_000);
      expect(plan.flags).not.toContain('fraud_review');
    }
  });

  it('reasons and flags vary, and every body is one the agents’ route accepts', () => {
    const planner = new DemoPlanner(seeded(3));
    const plans = Array.from({ length: demoLimits.requestsMax }, (_, i) => planner.plan(i + 1));
    const reasons = new Set(plans.map((p) => p.reason));
    expect(reasons.size).toBeGreaterThan(10);
    expect(reasons).toContain('Parcel arrived damaged');
    expect(reasons).toContain('Charged twice');
    expect(reasons).toContain(null);
    expect(new Set(plans.flatMap((p) => p.flags))).toEqual(new Set(['first_order', 'repeat_customer', 'subscription', 'vip', 'fraud_review']));
    plans.forEach((plan, i) => {
      const body = demoRequestBody(`demo-${i + 1}`, 'pi_3QeXampLe0000000000000', plan);
      expect([...Value.Errors(RefundRequestBodySchema, body)]).toEqual([]);
    });
  });

  it('the journal tally counts the demo agent’s own requests only, and finds the highest demo-<n>', () => {
    const request = (id: string, agent: string, repair_of?: string) => ({ id, agent, ...(repair_of ? { repair_of } : {}) });
    expect(tallyDemoRequests([])).toEqual({ count: 0, lastNumber: 0 });
    expect(
      tallyDemoRequests([
        request('demo-1', 'demo'),
        null,
        request('demo-7', 'demo'),
        request('demo-3', 'demo'),
        request('demo-9', 'support-bot'),
        request('repair-of-demo-7', 'demo', 'abc'),
        request('demo-x', 'demo'),
      ]),
    ).toEqual({ count: 4, lastNumber: 7 });
    expect([demoRequestNumber('demo-12'), demoRequestNumber('demo-0'), demoRequestNumber('demo-01'), demoRequestNumber('case-4471')]).toEqual([12, null, null, null]);
  });
});
