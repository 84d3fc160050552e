import { describe, expect, it } from 'vitest';
import type { ItemDetail } from '../../shared/api.ts';
import { originalRefusedWhy } from '../../web/src/components/DecisionPanel.tsx';

// Approving the original request is offered as a button only when it can succeed: on a stale item
// whose repair has not arrived yet, or a disputed one, the page says why it would be refused and
// offers nothing to press.

function detail(facts_now: Record<string, unknown>, repairs = 0, shown: Record<string, unknown> = { amount_received: 10_000, refunded_by_others: 0, disputed: false }): ItemDetail {
  return {
    request: { id: 'case-1', amount: 8_000, payment_intent: 'pi_1', agent: 'support-bot' },
    facts_then: { currency: 'usd' },
    facts_now: { currency: 'usd', ...facts_now },
    item: { reason: 'needs_judgment', facts: { currency: 'usd', ...shown }, repairs: Array.from({ length: repairs }, () => ({ code: 'refund_remaining', set: { amount: 7_000 }, why: 'Refund $70.00' })) },
    may_decide: true,
    approval_block: null,
  } as unknown as ItemDetail;
}

describe('when approving the original is refused for sure', () => {
  it('stale, the repair not here yet: refused, with why', () => {
    expect(originalRefusedWhy(detail({ amount_received: 10_000, refunded_by_others: 3_000, disputed: false }), 'usd')).toMatch(/only \$70\.00 is left/);
  });
  it('disputed: refused, with why', () => {
    expect(originalRefusedWhy(detail({ amount_received: 10_000, refunded_by_others: 0, disputed: true }), 'usd')).toMatch(/disputed/);
  });
  it('stale with its repair offered: the repair is the way, and the original stays a choice whose confirmation says it is refused', () => {
    expect(originalRefusedWhy(detail({ amount_received: 10_000, refunded_by_others: 3_000, disputed: false }, 1), 'usd')).toBeNull();
  });
  it('nothing changed: it can succeed', () => {
    expect(originalRefusedWhy(detail({ amount_received: 10_000, refunded_by_others: 0, disputed: false }), 'usd')).toBeNull();
  });
});
