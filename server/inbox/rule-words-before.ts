import type { InboxItem, RefundRequest } from '../../shared/api.ts';
import type { FailedRule } from '../../shared/entries.ts';
import type { JsonObject } from '../../shared/json.ts';
import { ruleFailure } from '../config/rules.ts';
import type { RuleConfig } from '../config/schema.ts';
import { type ChainSummary, summaryItem } from './summary.ts';

// An escalation journaled before the words of its failed rules were kept names those rules only,
// by names written as the condition that should have held ("amount at most $50.00"): read as
// they are, a row said the opposite of what happened. The rules Interlock shipped under those
// names are known, and the escalation kept the facts they were checked on, so each is worded
// again here, the same way the rules word it today ("over $50.00", "disputed", "flag: vip").

/** The rules of the shipped config under the names an older journal gives them. */
const RULES_BEFORE_WORDS: readonly RuleConfig[] = [
  { name: 'amount at most $50.00', kind: 'amount_at_most', amount: { usd: 5000 } },
  { name: "amount within its currency's limit", kind: 'amount_at_most', amount: { usd: 5000, eur: 5000, jpy: 7000 } },
  { name: 'no flag that needs a person', kind: 'no_flags', flags: ['vip', 'fraud_review'] },
  { name: 'payment not disputed', kind: 'not_disputed' },
  { name: 'amount fits what is left', kind: 'fits_remaining' },
];

/**
 * The failed rules of an escalation journaled without their words, worded from the facts it
 * kept. A rule name Interlock never shipped, or one that passes on those facts, reads "not met:
 * <name>". Null when the escalation kept its words or failed no rule.
 */
export function failedRulesBeforeWords(e: { reason: string; detail: InboxItem['detail']; facts: JsonObject; failed_rules?: FailedRule[] }, request: RefundRequest): FailedRule[] | null {
  if (e.failed_rules !== undefined || e.reason !== 'needs_judgment' || !Array.isArray(e.detail)) return null;
  const names = e.detail.filter((name): name is string => typeof name === 'string');
  if (names.length === 0) return null;
  return names.map((name) => {
    const rule = RULES_BEFORE_WORDS.find((known) => known.name === name);
    const words = rule === undefined ? null : ruleFailure(rule, request, e.facts);
    return { rule: name, words: words ?? `not met: ${name}` };
  });
}

/**
 * A chain's open item as people are shown it (the queue, the live feed, the item page): its
 * summary's item, with the failed rules of an older escalation worded. Still a function of the
 * journal alone.
 */
export function openItem(summary: ChainSummary): InboxItem | null {
  const item = summaryItem(summary);
  if (item === null) return null;
  const worded = failedRulesBeforeWords(item, item.request);
  return worded === null ? item : { ...item, failed_rules: worded };
}
