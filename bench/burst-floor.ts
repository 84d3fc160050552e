import { type BudgetCapacity, capacityFor, STRIPE_MODE_LIMITS } from '../server/stripe/budget.ts';
import type { StripeConfigText } from './configs.ts';

// The bursts of the stripe-limits stage and the floor each is judged against: however well
// Interlock paces its calls, a burst cannot settle before its Stripe calls fit the budget it is
// configured to use, so the floor is the largest, over the account and each endpoint, of the
// calls the burst needs there divided by the calls a second allowed there.

/** Stripe calls one routine refund makes: one read of its payment (refunds expanded), one create. */
export const CALLS_PER_ROUTINE_REFUND = 2;
/** A burst must settle within this many times its floor. */
export const SETTLE_OVER_FLOOR_MAX = 1.25;

/** Which of Stripe's published limits a burst runs under. */
export const BURST_MODES = ['test', 'live'] as const;
/** One of them. */
export type BurstMode = (typeof BURST_MODES)[number];

/**
 * What Interlock is told of the limits in each mode, at the default share: the sandbox is held to
 * test mode's limits unless told otherwise, so live mode's are written out.
 */
export const BURST_STRIPE_CONFIG: Readonly<Record<BurstMode, StripeConfigText>> = {
  test: { mode: 'sandbox' },
  live: {
    mode: 'sandbox',
    rate_limits: { global_per_second: STRIPE_MODE_LIMITS.live.globalPerSecond, endpoint_per_second: STRIPE_MODE_LIMITS.live.endpointPerSecond },
  },
};

/** Stripe's own limits in a mode: 100% of them. */
export function stripeCapacity(mode: BurstMode): BudgetCapacity {
  return capacityFor(mode, 1);
}

/** The budget Interlock is configured to use in a mode: the default share of Stripe's limits. */
export function configuredCapacity(mode: BurstMode): BudgetCapacity {
  return capacityFor(mode);
}

/**
 * The shortest time in which `refunds` routine refunds can reach Stripe at `capacity`: every refund
 * makes one call to each of two endpoints, so the account sees twice as many calls as each endpoint.
 */
export function floorS(refunds: number, capacity: BudgetCapacity): number {
  const accountS = (refunds * CALLS_PER_ROUTINE_REFUND) / capacity.globalPerWindow;
  const endpointS = refunds / capacity.endpointPerWindow;
  return Math.max(accountS, endpointS);
}

/** The floor written out, as the bench prints it: each bound, at Stripe's limits and at the configured share. */
export function describeFloor(mode: BurstMode, refunds: number): string {
  const at = (capacity: BudgetCapacity) =>
    `${fmt(refunds * CALLS_PER_ROUTINE_REFUND)}/${capacity.globalPerWindow} = ${fmt(round((refunds * CALLS_PER_ROUTINE_REFUND) / capacity.globalPerWindow))} s for the account, ${fmt(refunds)}/${capacity.endpointPerWindow} = ${fmt(round(refunds / capacity.endpointPerWindow))} s per endpoint → ${fmt(round(floorS(refunds, capacity)))} s`;
  return `${fmt(refunds)} routine refunds × ${CALLS_PER_ROUTINE_REFUND} calls under ${mode}-mode limits: at 100% of Stripe's limits ${at(stripeCapacity(mode))}; at the configured budget ${at(configuredCapacity(mode))}`;
}

const round = (value: number) => Math.round(value * 100) / 100;
const fmt = (value: number) => value.toLocaleString('en-US');
