import { describe, expect, it } from 'vitest';
import { evaluateRules, pickRoute, type RouteItem, type RuleFacts, type RuleRequest, ruleFailure } from '../../server/config/rules.ts';
import type { RouteConfig, RuleConfig } from '../../server/config/schema.ts';
import { buildFileConfig, parseFileConfig } from './support.ts';

// inbox.md §24 setup: orders of 400 dollars, nothing refunded, no dispute; the §20.4 rules and
// routes in cents of a dollar, with the crash route also matching target_error.
const CONFIG = parseFileConfig(buildFileConfig());
const ORDER_FACTS: RuleFacts = { currency: 'usd', amount_received: 40_000, refunded_by_others: 0, disputed: false };

function buildRequest(overrides: Partial<RuleRequest> = {}): RuleRequest {
  return { amount: 2_000, flags: [], reason: 'damaged in transit', ...overrides };
}

/** Route a request the way the inbox does: rules on the captured facts, then the first matching route. */
function routeFor(request: RuleRequest, reason?: string): { route: RouteConfig; failed: string[] } {
  const failed = evaluateRules(CONFIG.rules, request, ORDER_FACTS).failed.map((f) => f.rule);
  const item: RouteItem = { request, facts: ORDER_FACTS, reason: reason ?? 'needs_judgment', failed };
  return { route: pickRoute(CONFIG.routes, item), failed };
}

describe('rules', () => {
  const amountAtMost: RuleConfig = { kind: 'amount_at_most', name: 'at most $50', amount: { usd: 5_000 } };
  const noFlags: RuleConfig = { kind: 'no_flags', name: 'not flagged', flags: ['vip', 'fraud_review'] };
  const notDisputed: RuleConfig = { kind: 'not_disputed', name: 'not disputed' };
  const fitsRemaining: RuleConfig = { kind: 'fits_remaining', name: 'fits' };
  const facts = (overrides: RuleFacts = {}): RuleFacts => ({ currency: 'usd', amount_received: 10_000, refunded_by_others: 3_000, disputed: false, ...overrides });

  // rule, request, facts, the words it fails with (null: it passes)
  const TABLE: [string, RuleConfig, RuleRequest, RuleFacts, string | null][] = [
    ['amount_at_most passes at the limit', amountAtMost, buildRequest({ amount: 5_000 }), facts(), null],
    ['amount_at_most fails one cent over', amountAtMost, buildRequest({ amount: 5_001 }), facts(), 'over $50.00'],
    ['amount_at_most fails a non-integer amount', amountAtMost, buildRequest({ amount: 49.5 }), facts(), 'the amount is not a whole number'],
    ['amount_at_most fails closed when the currency is missing', amountAtMost, buildRequest({ amount: 100 }), facts({ currency: undefined }), "the payment's currency is not known"],
    ['amount_at_most reads a currency Stripe wrote in capitals', amountAtMost, buildRequest({ amount: 5_001 }), facts({ currency: 'USD' }), 'over $50.00'],
    ['no_flags passes with no flags', noFlags, buildRequest(), facts(), null],
    ['no_flags passes with a flag not listed', noFlags, buildRequest({ flags: ['returning_customer'] }), facts(), null],
    ['no_flags fails with a listed flag among others', noFlags, buildRequest({ flags: ['returning_customer', 'fraud_review'] }), facts(), 'flag: fraud_review'],
    ['no_flags names every listed flag it carries', noFlags, buildRequest({ flags: ['fraud_review', 'vip'] }), facts(), 'flags: fraud_review, vip'],
    ['not_disputed passes when disputed is false', notDisputed, buildRequest(), facts(), null],
    ['not_disputed fails when disputed', notDisputed, buildRequest(), facts({ disputed: true }), 'disputed'],
    ['not_disputed fails closed when the fact is missing', notDisputed, buildRequest(), facts({ disputed: undefined }), 'not known whether it is disputed'],
    ['fits_remaining passes when the amount equals what is left', fitsRemaining, buildRequest({ amount: 7_000 }), facts(), null],
    ['fits_remaining fails one cent over what is left', fitsRemaining, buildRequest({ amount: 7_001 }), facts(), 'more than the $70.00 left'],
    ['fits_remaining words what is left in the payment currency', fitsRemaining, buildRequest({ amount: 7_001 }), facts({ currency: 'jpy' }), 'more than the ¥7,000 left'],
    ['fits_remaining fails closed without amount_received', fitsRemaining, buildRequest(), facts({ amount_received: undefined }), 'what is left to refund is not known'],
    ['fits_remaining fails closed on a malformed refunded_by_others', fitsRemaining, buildRequest(), facts({ refunded_by_others: '0' }), 'what is left to refund is not known'],
  ];

  it.each(TABLE)('%s', (_what, rule, request, ruleFacts, words) => {
    expect(ruleFailure(rule, request, ruleFacts)).toBe(words);
    expect(evaluateRules([rule], request, ruleFacts)).toEqual({ passed: words === null, failed: words === null ? [] : [{ rule: rule.name, words }] });
  });

  it('evaluates every rule and names all the failing ones in rule order', () => {
    const rules = [amountAtMost, noFlags, notDisputed, fitsRemaining];
    const outcome = evaluateRules(rules, buildRequest({ amount: 9_000, flags: ['vip'] }), facts({ disputed: true }));
    expect(outcome).toEqual({
      passed: false,
      failed: [
        { rule: 'at most $50', words: 'over $50.00' },
        { rule: 'not flagged', words: 'flag: vip' },
        { rule: 'not disputed', words: 'disputed' },
        { rule: 'fits', words: 'more than the $70.00 left' },
      ],
    });
  });

  // One amount rule over Stripe's two-, zero- and three-decimal currencies (shared/money.ts): each
  // amount is compared with the limit in its own currency and worded in it. About $50 each.
  const limits: RuleConfig = { kind: 'amount_at_most', name: 'within the limit', amount: { usd: 5_000, eur: 5_000, jpy: 7_000, krw: 70_000, kwd: 15_000 } };
  // currency, amount in its smallest unit, the words it fails with (null: it passes)
  const CURRENCIES: [string, number, string | null][] = [
    ['usd', 5_000, null],
    ['usd', 5_001, 'over $50.00'],
    ['eur', 5_000, null],
    ['eur', 5_001, 'over €50.00'],
    ['jpy', 7_000, null],
    ['jpy', 7_001, 'over ¥7,000'],
    ['krw', 70_000, null],
    ['krw', 70_001, 'over ₩70,000'],
    ['kwd', 15_000, null],
    // Intl writes a no-break space between a code and the amount.
    ['kwd', 15_001, 'over KWD\u00a015.000'],
  ];

  it.each(CURRENCIES)('amount_at_most in %s: %i', (currency, amount, words) => {
    expect(ruleFailure(limits, buildRequest({ amount }), facts({ currency }))).toBe(words);
  });

  it.each([
    ['jpy', 5_000],
    ['eur', 5_000],
    ['krw', 5_000],
    ['kwd', 4_000],
  ])('a rule naming US dollars only never compares %s with them: %i goes to a person, who is told why', (currency, amount) => {
    expect(ruleFailure(amountAtMost, buildRequest({ amount }), facts({ currency }))).toBe(`no amount limit for ${currency.toUpperCase()}`);
  });

  it('no rules at all: everything passes', () => {
    expect(evaluateRules([], buildRequest({ amount: 99_999_999 }), {})).toEqual({ passed: true, failed: [] });
  });

  it('a routine refund under every rule clears with no person', () => {
    expect(evaluateRules(CONFIG.rules, buildRequest({ amount: 4_000 }), ORDER_FACTS)).toEqual({ passed: true, failed: [] });
  });
});

describe('routes (inbox.md §24.1 and §20.4, in cents of a dollar)', () => {
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
        { name: 'big-judgment', when: { amount_at_least: { usd: 10_000 }, amount_at_most: { usd: 50_000 }, reason_in: ['needs_judgment'] }, chain: ['controller'] },
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

  describe('an amount condition compares in the currency it names', () => {
    const routes = parseFileConfig({
      ...buildFileConfig(),
      routes: [
        { name: 'small', when: { amount_at_most: { usd: 1_000, jpy: 1_500 } }, chain: ['ap-leads'] },
        { name: 'large', when: { amount_over: { usd: 20_000, eur: 20_000, jpy: 30_000, krw: 300_000, kwd: 60_000 } }, chain: ['controller'] },
        { name: 'default', chain: ['ap-leads', 'finance-manager'] },
      ],
    }).routes;
    const pick = (currency: string | undefined, amount: number) =>
      pickRoute(routes, { request: buildRequest({ amount }), facts: { ...ORDER_FACTS, currency }, reason: 'needs_judgment', failed: [] }).name;

    it.each([
      // currency, amount in its smallest unit, route
      ['usd', 20_000, 'default'],
      ['usd', 20_001, 'large'],
      ['eur', 20_001, 'large'],
      // ¥25,000 is about $167: not over ¥30,000, whatever 25,000 cents would be.
      ['jpy', 25_000, 'default'],
      ['jpy', 30_001, 'large'],
      ['krw', 250_000, 'default'],
      ['krw', 300_001, 'large'],
      ['kwd', 60_000, 'default'],
      ['kwd', 60_001, 'large'],
      ['jpy', 1_500, 'small'],
      ['usd', 1_500, 'default'],
    ])('%s %i goes to %s', (currency, amount, route) => {
      expect(pick(currency, amount)).toBe(route);
    });

    it('an amount in a currency no condition names, or in no known currency, counts as over every threshold: not small, large', () => {
      expect(pick('gbp', 100)).toBe('large');
      expect(pick(undefined, 100)).toBe('large');
    });
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
