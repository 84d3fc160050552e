import { describe, expect, it } from 'vitest';
import { evaluateRules, pickRoute, type RouteItem, type RuleFacts, type RuleRequest } from '../../server/config/rules.ts';
import type { RouteConfig, RuleConfig } from '../../server/config/schema.ts';
import { buildFileConfig, parseFileConfig } from './support.ts';

// inbox.md §24 setup: orders of 400 dollars, nothing refunded, no dispute; the §20.4 rules and
// routes in cents, with the crash route also matching target_error.
const CONFIG = parseFileConfig(buildFileConfig());
const ORDER_FACTS: RuleFacts = { amount_received: 40_000, refunded_by_others: 0, disputed: false };

function buildRequest(overrides: Partial<RuleRequest> = {}): RuleRequest {
  return { amount: 2_000, flags: [], reason: 'damaged in transit', ...overrides };
}

/** Route a request the way the inbox does: rules on the captured facts, then the first matching route. */
function routeFor(request: RuleRequest, reason?: string): { route: RouteConfig; failed: string[] } {
  const { failed } = evaluateRules(CONFIG.rules, request, ORDER_FACTS);
  const item: RouteItem = { request, facts: ORDER_FACTS, reason: reason ?? 'needs_judgment', failed };
  return { route: pickRoute(CONFIG.routes, item), failed };
}

describe('rules', () => {
  const amountAtMost: RuleConfig = { kind: 'amount_at_most', name: 'at most $50', cents: 5_000 };
  const noFlags: RuleConfig = { kind: 'no_flags', name: 'not flagged', flags: ['vip', 'fraud_review'] };
  const notDisputed: RuleConfig = { kind: 'not_disputed', name: 'not disputed' };
  const fitsRemaining: RuleConfig = { kind: 'fits_remaining', name: 'fits' };
  const facts = (overrides: RuleFacts = {}): RuleFacts => ({ amount_received: 10_000, refunded_by_others: 3_000, disputed: false, ...overrides });

  // rule, request, facts, passes
  const TABLE: [string, RuleConfig, RuleRequest, RuleFacts, boolean][] = [
    ['amount_at_most passes at the limit', amountAtMost, buildRequest({ amount: 5_000 }), facts(), true],
    ['amount_at_most fails one cent over', amountAtMost, buildRequest({ amount: 5_001 }), facts(), false],
    ['amount_at_most fails a non-integer amount', amountAtMost, buildRequest({ amount: 49.5 }), facts(), false],
    ['no_flags passes with no flags', noFlags, buildRequest(), facts(), true],
    ['no_flags passes with a flag not listed', noFlags, buildRequest({ flags: ['returning_customer'] }), facts(), true],
    ['no_flags fails with a listed flag among others', noFlags, buildRequest({ flags: ['returning_customer', 'fraud_review'] }), facts(), false],
    ['not_disputed passes when disputed is false', notDisputed, buildRequest(), facts(), true],
    ['not_disputed fails when disputed', notDisputed, buildRequest(), facts({ disputed: true }), false],
    ['not_disputed fails closed when the fact is missing', notDisputed, buildRequest(), facts({ disputed: undefined }), false],
    ['fits_remaining passes when the amount equals what is left', fitsRemaining, buildRequest({ amount: 7_000 }), facts(), true],
    ['fits_remaining fails one cent over what is left', fitsRemaining, buildRequest({ amount: 7_001 }), facts(), false],
    ['fits_remaining fails closed without amount_received', fitsRemaining, buildRequest(), facts({ amount_received: undefined }), false],
    ['fits_remaining fails closed on a malformed refunded_by_others', fitsRemaining, buildRequest(), facts({ refunded_by_others: '0' }), false],
  ];

  it.each(TABLE)('%s', (_what, rule, request, ruleFacts, passes) => {
    expect(evaluateRules([rule], request, ruleFacts)).toEqual({ passed: passes, failed: passes ? [] : [rule.name] });
  });

  it('evaluates every rule and names all the failing ones in rule order', () => {
    const rules = [amountAtMost, noFlags, notDisputed, fitsRemaining];
    const outcome = evaluateRules(rules, buildRequest({ amount: 9_000, flags: ['vip'] }), facts({ disputed: true }));
    expect(outcome).toEqual({ passed: false, failed: ['at most $50', 'not flagged', 'not disputed', 'fits'] });
  });

  it('no rules at all: everything passes', () => {
    expect(evaluateRules([], buildRequest({ amount: 99_999_999 }), {})).toEqual({ passed: true, failed: [] });
  });

  it('a routine refund under every rule clears with no person', () => {
    expect(evaluateRules(CONFIG.rules, buildRequest({ amount: 4_000 }), ORDER_FACTS)).toEqual({ passed: true, failed: [] });
  });
});

describe('routes (inbox.md §24.1 and §20.4, in cents)', () => {
  it('25000 goes to the large route, controller first, with a 4 h SLA', () => {
    const { route, failed } = routeFor(buildRequest({ amount: 25_000 }));
    expect(failed).toEqual(['amount under $50']);
    expect([route.name, route.chain[0], route.slaMs]).toEqual(['large', 'controller', 4 * 3_600_000]);
  });

  it('2000 flagged goes to risk, with no SLA', () => {
    const { route, failed } = routeFor(buildRequest({ amount: 2_000, flags: ['flagged'] }));
    expect(failed).toEqual(['customer not flagged']);
    expect([route.name, route.chain, route.slaMs]).toEqual(['flagged', ['risk'], null]);
  });

  it('8000 goes to the default route, ap-leads then finance-manager, with a 4 h SLA', () => {
    const { route, failed } = routeFor(buildRequest({ amount: 8_000 }));
    expect(failed).toEqual(['amount under $50']);
    expect([route.name, route.chain, route.slaMs]).toEqual(['default', ['ap-leads', 'finance-manager'], 4 * 3_600_000]);
  });

  it('exactly 20000 is not over the large threshold', () => {
    expect(routeFor(buildRequest({ amount: 20_000 })).route.name).toBe('default');
  });

  it.each(['ambiguous', 'target_error', 'stale_premise_at_recovery', 'lease_at_recovery'])(
    'a %s escalation goes to payments-ops, whatever the amount',
    (reason) => {
      expect(routeFor(buildRequest({ amount: 2_000 }), reason).route.chain).toEqual(['payments-ops']);
      expect(routeFor(buildRequest({ amount: 25_000 }), reason).route.name).toBe('crash');
    },
  );

  it('a stale_premise escalation is not a crash and routes by amount', () => {
    expect(routeFor(buildRequest({ amount: 25_000 }), 'stale_premise').route.name).toBe('large');
  });

  it('the first match wins: a flagged crash goes to risk', () => {
    expect(routeFor(buildRequest({ flags: ['flagged'] }), 'ambiguous').route.name).toBe('flagged');
  });

  it('every given condition must hold, and rules_failed_any keys on the failed rule names', () => {
    const routes = parseFileConfig({
      ...buildFileConfig(),
      routes: [
        { name: 'big-judgment', when: { amount_at_least_cents: 10_000, amount_at_most_cents: 50_000, reason_in: ['needs_judgment'] }, chain: ['controller'] },
        { name: 'disputed', when: { rules_failed_any: ['payment not disputed'] }, chain: ['risk'] },
        { name: 'default', chain: ['ap-leads'] },
      ],
    }).routes;
    const pick = (amount: number, reason: string, failed: string[]) => pickRoute(routes, { request: buildRequest({ amount }), facts: ORDER_FACTS, reason, failed }).name;
    expect(pick(10_000, 'needs_judgment', [])).toBe('big-judgment');
    expect(pick(50_000, 'needs_judgment', [])).toBe('big-judgment');
    expect(pick(9_999, 'needs_judgment', [])).toBe('default');
    expect(pick(50_001, 'needs_judgment', [])).toBe('default');
    expect(pick(20_000, 'stale_premise', [])).toBe('default');
    expect(pick(100, 'needs_judgment', ['amount under $50', 'payment not disputed'])).toBe('disputed');
  });

  it('an amount condition on a malformed amount does not hold, so the item falls through to the catch-all', () => {
    const item: RouteItem = { request: buildRequest({ amount: Number.NaN }), facts: {}, reason: 'needs_judgment', failed: [] };
    expect(pickRoute(CONFIG.routes, item).name).toBe('default');
  });

  it('routes with no catch-all are our bug and fail loudly', () => {
    const item: RouteItem = { request: buildRequest(), facts: ORDER_FACTS, reason: 'needs_judgment', failed: [] };
    expect(() => pickRoute(CONFIG.routes.slice(0, 1), item)).toThrow(/no route matched/);
  });
});
