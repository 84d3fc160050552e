import type { Entry } from '../../shared/entries.ts';
import type { Step } from './entries.ts';
import { buildChain } from './entries.ts';

// Refund chains as the inbox writes them, for journals of any length: a request the policy
// cleared, sent and committed, then Stripe's word on it (taken from the day-1 fixture journal).

const RULES = ['amount at most $50.00', 'no flag that needs a person', 'payment not disputed', 'amount fits what is left'];
const LEASE = { by: 'policy', rules: RULES };
const START_MS = 1_796_198_700_000;

/** The effect id of the n-th refund: 12 hex digits. */
export const refundEffectId = (n: number): string => `ab${n.toString(16).padStart(10, '0')}`;

/** The steps of refund `n` through its commit, then one CONFIRMED per status in `confirmations`. */
function refundSteps(n: number, confirmations: readonly string[]): Step[] {
  const pi = `pi_refund_${n}`;
  const premises = { amount_received: 10_000, currency: 'usd', disputed: false, payment_intent: pi, refunded_by_others: 0, refunded_outside: 0 };
  const effect = { amount: 2_000, payment_intent: pi };
  const refund = `re_refund_${n}`;
  return [
    ['PROPOSED', { agent: 'inbox', at_ms: START_MS + n, effect, lease: LEASE, premises, request: { agent: 'support-bot', amount: 2_000, flags: [], id: `refund-${n}`, payment_intent: pi } }],
    ['AUTHORIZED', { lease: LEASE }],
    ['DISPATCHED', { checks: { lease: null, lease_live: true, violations: [] }, effect, lease: LEASE, premises, reserves: pi }],
    ['COMMITTED', { result: { amount: 2_000, refund, status: 'ok' } }],
    ...confirmations.map((status, i): Step => ['CONFIRMED', { amount: 2_000, created: 1_796_199_000 + i, event: `evt_${n}_${i}`, payment_intent: pi, refund, status, via: 'webhook' }]),
  ];
}

/** Refund `n`'s chain, sealed: committed, then confirmed once per status given. */
export function refundChain(n: number, confirmations: readonly string[] = []): Entry[] {
  return buildChain(refundEffectId(n), refundSteps(n, confirmations), { startMs: START_MS + n * 10_000 });
}
