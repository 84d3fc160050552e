import type { FailedRule } from './entries.ts';
import type { Json } from './json.ts';
import { whyFor } from './statuses.ts';

// Why an escalation needs a person, in the words its rules were given when they ran: one reading
// for the inbox rows, the item page, the agent's `why` and every message. No I/O.

/** What the words are read from: an escalation entry, or an inbox item made from one. */
export interface EscalationReasons {
  reason: string;
  why: string;
  detail: Json;
  failed_rules?: FailedRule[];
}

/** Between the words of two failed rules. */
export const FAILED_RULES_SEPARATOR = ' · ';

/**
 * The words of each failed rule: `["over $50.00", "disputed", "flag: vip"]`, as fixed when the
 * rules ran. An escalation journaled before the words were kept names its failed rules only, by
 * names written as conditions ("amount at most $50.00"), so each is read as a condition not met.
 * Empty when no rule failed (an escalation for a refusal or a crash).
 */
export function failedRuleWords(escalation: EscalationReasons): string[] {
  if (escalation.failed_rules !== undefined && escalation.failed_rules.length > 0) return escalation.failed_rules.map((failed) => failed.words);
  if (escalation.reason !== 'needs_judgment' || !Array.isArray(escalation.detail)) return [];
  return escalation.detail.filter((name): name is string => typeof name === 'string').map((name) => `not met: ${name}`);
}

/** The words of the failed rules joined: what a rule failure's `why` says. */
export function failedRulesText(failed: readonly FailedRule[]): string {
  return failed.map((rule) => rule.words).join(FAILED_RULES_SEPARATOR);
}

/** Why it needs a person, on one line: the failed rules' words (`over $50.00 · disputed`), else the escalation's why. */
export function escalationWhy(escalation: EscalationReasons): string {
  const words = failedRuleWords(escalation);
  if (words.length > 0) return words.join(FAILED_RULES_SEPARATOR);
  return escalation.why || whyFor(escalation.reason);
}
