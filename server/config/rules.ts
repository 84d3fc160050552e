import type { RefundRequest } from '../../shared/api.ts';
import type { FailedRule } from '../../shared/entries.ts';
import { formatAmount } from '../../shared/money.ts';
import { assertNever } from '../../shared/statuses.ts';
import type { MinorUnitsByCurrency, RouteConfig, RouteWhen, RuleConfig } from './schema.ts';

/** What the rules and routes read of a refund request: the amount in the payment's smallest currency unit, the agent's flags and reason. */
export type RuleRequest = Pick<RefundRequest, 'amount' | 'flags' | 'reason'>;

/**
 * What the rules read of the facts captured from Stripe: the payment's currency, and amounts in
 * its smallest unit. Every field is optional because a capture may lack one; a rule or condition
 * that needs a missing fact does not hold.
 */
export interface RuleFacts {
  currency?: unknown;
  amount_received?: unknown;
  refunded_by_others?: unknown;
  disputed?: unknown;
}

/** The rules' verdict: `passed` only when every rule passed; `failed` names and words the others, in rule order. */
export interface RuleOutcome {
  passed: boolean;
  failed: FailedRule[];
}

/** What a route's `when` is matched against. */
export interface RouteItem {
  request: RuleRequest;
  facts: RuleFacts;
  /** The escalation's reason code (`needs_judgment`, `ambiguous`, ...), not the agent's text. */
  reason: string;
  /** Names of the rules that failed, for `rules_failed_any`. */
  failed: readonly string[];
}

function minorUnits(value: unknown): number | null {
  return typeof value === 'number' && Number.isSafeInteger(value) ? value : null;
}

/** The payment's currency as Stripe writes it (lowercase), or null when the facts do not say. */
function currencyOf(facts: RuleFacts): string | null {
  return typeof facts.currency === 'string' && /^[A-Za-z]{3}$/.test(facts.currency) ? facts.currency.toLowerCase() : null;
}

/**
 * How a rule fails, in words for the person who then decides (`over $50.00`, `flag: vip`), or
 * null when it passes. Worded once, here, per rule kind and currency; the escalation keeps the
 * words. A fact that is missing or malformed fails the rule, so a person looks, and is told so.
 */
export function ruleFailure(rule: RuleConfig, request: RuleRequest, facts: RuleFacts): string | null {
  const amount = minorUnits(request.amount);
  switch (rule.kind) {
    case 'amount_at_most': {
      if (amount === null) return 'the amount is not a whole number';
      const currency = currencyOf(facts);
      if (currency === null) return "the payment's currency is not known";
      // An amount is compared only with a limit in its own currency: ¥5,000 is not $50.00.
      const limit = Object.hasOwn(rule.amount, currency) ? rule.amount[currency] : undefined;
      if (limit === undefined) return `no amount limit for ${currency.toUpperCase()}`;
      return amount <= limit ? null : `over ${formatAmount(limit, currency)}`;
    }
    case 'no_flags': {
      if (!Array.isArray(request.flags)) return 'the flags are not known';
      const needing = request.flags.filter((flag) => rule.flags.includes(flag));
      if (needing.length === 0) return null;
      return `${needing.length === 1 ? 'flag' : 'flags'}: ${needing.join(', ')}`;
    }
    case 'not_disputed':
      if (facts.disputed === false) return null;
      return facts.disputed === true ? 'disputed' : 'not known whether it is disputed';
    case 'fits_remaining': {
      const received = minorUnits(facts.amount_received);
      const refunded = minorUnits(facts.refunded_by_others);
      if (amount === null || received === null || refunded === null) return 'what is left to refund is not known';
      const left = received - refunded;
      return amount <= left ? null : `more than the ${formatAmount(Math.max(0, left), currencyOf(facts))} left`;
    }
    default:
      return assertNever(rule);
  }
}

/** Evaluate every rule in order; the request clears with no person only when all pass. */
export function evaluateRules(rules: readonly RuleConfig[], request: RuleRequest, facts: RuleFacts): RuleOutcome {
  const failed: FailedRule[] = [];
  for (const rule of rules) {
    const words = ruleFailure(rule, request, facts);
    if (words !== null) failed.push({ rule: rule.name, words });
  }
  return { passed: failed.length === 0, failed };
}

/**
 * Whether an amount condition holds. Compared only in a currency the threshold names; an amount in
 * another (or an unknown) currency is unknown money, which `unnamed` says what to do with: it
 * counts as over every threshold, so it goes the way large amounts go.
 */
function amountHolds(
  thresholds: MinorUnitsByCurrency | undefined,
  amount: number | null,
  currency: string | null,
  holds: (amount: number, threshold: number) => boolean,
  unnamed: boolean,
): boolean {
  if (thresholds === undefined) return true;
  if (amount === null) return false;
  const threshold = currency !== null && Object.hasOwn(thresholds, currency) ? thresholds[currency] : undefined;
  return threshold === undefined ? unnamed : holds(amount, threshold);
}

/** Whether every condition given in `when` holds; a condition on a missing amount or flags does not (an unknown currency: see amountHolds). */
function matches(when: RouteWhen, item: RouteItem): boolean {
  const amount = minorUnits(item.request.amount);
  const currency = currencyOf(item.facts);
  const flags = Array.isArray(item.request.flags) ? item.request.flags : [];
  const checks = [
    amountHolds(when.amountOver, amount, currency, (a, t) => a > t, true),
    amountHolds(when.amountAtLeast, amount, currency, (a, t) => a >= t, true),
    amountHolds(when.amountAtMost, amount, currency, (a, t) => a <= t, false),
    when.flagsAny === undefined || flags.some((flag) => when.flagsAny?.includes(flag)),
    when.reasonIn === undefined || when.reasonIn.some((code) => code === item.reason),
    when.rulesFailedAny === undefined || item.failed.some((name) => when.rulesFailedAny?.includes(name)),
  ];
  return checks.every(Boolean);
}

/** The first route whose `when` holds, or the catch-all that every loaded config ends with. */
export function pickRoute(routes: readonly RouteConfig[], item: RouteItem): RouteConfig {
  const route = routes.find((r) => r.when === null || matches(r.when, item));
  // The loader refuses a config whose last route has a `when`, so no match is our bug.
  if (route === undefined) throw new Error('pickRoute: no route matched; a loaded config always ends with a catch-all');
  return route;
}
