import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { BURST_MODES, BURST_STRIPE_CONFIG, configuredCapacity, describeFloor, floorS, stripeCapacity } from '../../bench/burst-floor.ts';
import { UNPACED_STRIPE_CONFIG, writeStripeConfig } from '../../bench/configs.ts';
import { FULL } from '../../bench/plans.ts';
import { TARGETS } from '../../bench/report.ts';
import { loadConfig } from '../../server/config/load.ts';
import { budgetFromConfig } from '../../server/app/services.ts';

// A burst of routine refunds cannot settle before its Stripe calls fit the budget: the floor is
// the largest, over the account and each endpoint, of the calls needed there ÷ the rate allowed.

describe('the floor of a burst of routine refunds', () => {
  it.each([
    // mode, refunds, at Stripe's limits (s), at the configured 80% (s)
    ['test', 200, 16, 20],
    ['live', 1_000, 40, 50],
    ['test', 20, 1.6, 2],
    ['live', 20, 0.8, 1],
  ] as const)('%s-mode limits, %s refunds: %s s at Stripe’s limits, %s s at the configured budget', (mode, refunds, atStripeS, configuredS) => {
    expect(floorS(refunds, stripeCapacity(mode))).toBeCloseTo(atStripeS, 9);
    expect(floorS(refunds, configuredCapacity(mode))).toBeCloseTo(configuredS, 9);
  });

  it('the full run is judged at 1.25 × its floor: 25 s for 200 refunds under test-mode limits, 62.5 s for 1,000 under live-mode limits', () => {
    expect(FULL.burstRefunds).toEqual({ test: 200, live: 1_000 });
    expect(TARGETS.burst_settle_s_test).toEqual({ op: '<=', value: 25 });
    expect(TARGETS.burst_settle_s_live).toEqual({ op: '<=', value: 62.5 });
  });

  it('the floor as printed names each bound at 100% and at the configured share', () => {
    expect(describeFloor('live', 1_000)).toBe(
      "1,000 routine refunds × 2 calls under live-mode limits: at 100% of Stripe's limits 2,000/100 = 20 s for the account, 1,000/25 = 40 s per endpoint → 40 s; at the configured budget 2,000/80 = 25 s for the account, 1,000/20 = 50 s per endpoint → 50 s",
    );
  });
});

describe('the configs the bench runs servers with', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-configs-'));

  it.each(BURST_MODES)('%s-mode burst: the budget Interlock builds from its config is the one its floor is computed at', (mode) => {
    const config = loadConfig(writeStripeConfig(dir, mode, BURST_STRIPE_CONFIG[mode]));
    expect(budgetFromConfig(config).capacity).toEqual(configuredCapacity(mode));
  });

  it('without limits: Interlock’s budget is the most the config accepts, far above any load the bench sends', () => {
    const config = loadConfig(writeStripeConfig(dir, 'unpaced', UNPACED_STRIPE_CONFIG));
    expect(budgetFromConfig(config).capacity).toEqual({ globalPerWindow: 10_000, endpointPerWindow: 10_000 });
  });
});
