import type { RefundRequest } from '../../shared/api.ts';
import { assertNever } from '../../shared/statuses.ts';
import type { RouteConfig, RouteWhen, RuleConfig } from './schema.ts';

/** What the rules and routes read of a refund request: the amount in cents, the agent's flags and reason. */
export type RuleRequest = Pick<RefundRequest, 'amount' | 'flags' | 'reason'>;

/**
 * What the rules read of the facts captured from Stripe, in cents. Every field is optional
 * because a capture may lack one; a rule or condition that needs a missing fact does not hold.
 */
export interface RuleFacts {
  amount_received?: unknown;
  refunded_by_others?: unknown;
  disputed?: unknown;
}

/** The rules' verdict: `passed` only when every rule passed; `failed` names the others in rule order. */
export interface RuleOutcome {
  passed: boolean;
  failed: string[];
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

function cents(value: unknown): number | null {
  return typeof value === 'number' && Number.isSafeInteger(value) ? value : null;
}

/** Whether one rule passes. A fact that is missing or malformed fails it, so a person looks. */
function passes(rule: RuleConfig, request: RuleRequest, facts: RuleFacts): boolean {
  const amount = cents(request.amount);
  switch (rule.kind) {
    case 'amount_at_most':
      return amount !== null && amount <= rule.cents;
    case 'no_flags':
      return Array.isArray(request.flags) && !request.flags.some((flag) => rule.flags.includes(flag));
    case 'not_disputed':
      return facts.disputed === false;
    case 'fits_remaining': {
      const received = cents(facts.amount_received);
      const refunded = cents(facts.refunded_by_others);
      return amount !== null && received !== null && refunded !== null && amount <= received - refunded;
    }
    default:
      return assertNever(rule);
  }
}

/** Evaluate every rule in order; the request clears with no person only when all pass. */
export function evaluateRules(rules: readonly RuleConfig[], request: RuleRequest, facts: RuleFacts): RuleOutcome {
  const failed = rules.filter((rule) => !passes(rule, request, facts)).map((rule) => rule.name);
  return { passed: failed.length === 0, failed };
}

/** Whether every condition given in `when` holds; a condition on a missing value does not. */
function matches(when: RouteWhen, item: RouteItem): boolean {
  const amount = cents(item.request.amount);
  const flags = Array.isArray(item.request.flags) ? item.request.flags : [];
  const checks = [
    when.amountOverCents === undefined || (amount !== null && amount > when.amountOverCents),
    when.amountAtLeastCents === undefined || (amount !== null && amount >= when.amountAtLeastCents),
    when.amountAtMostCents === undefined || (amount !== null && amount <= when.amountAtMostCents),
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
