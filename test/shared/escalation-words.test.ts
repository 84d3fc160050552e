import { describe, expect, it } from 'vitest';
import { escalationWhy, type EscalationReasons, failedRuleWords } from '../../shared/escalation-words.ts';

// One reading of why an escalation needs a person, for the inbox rows, the item page, the agent's
// `why` and every message: the failed rules' words as the escalation kept them; for an escalation
// journaled before they were kept, its failed rules' names, each read as a condition not met.

const escalation = (fields: Partial<EscalationReasons>): EscalationReasons => ({ reason: 'needs_judgment', why: 'a rule wants a person to decide', detail: [], ...fields });

describe('why an escalation needs a person', () => {
  it.each([
    [
      'the words each failed rule was given when the rules ran',
      escalation({
        why: 'over $50.00 · disputed · flag: vip',
        detail: ['amount within its limit', 'payment not disputed', 'no flag that needs a person'],
        failed_rules: [
          { rule: 'amount within its limit', words: 'over $50.00' },
          { rule: 'payment not disputed', words: 'disputed' },
          { rule: 'no flag that needs a person', words: 'flag: vip' },
        ],
      }),
      ['over $50.00', 'disputed', 'flag: vip'],
      'over $50.00 · disputed · flag: vip',
    ],
    [
      'an escalation from before the words were kept: its rules by name, as conditions not met',
      escalation({ detail: ['amount at most $50.00', 'payment not disputed'] }),
      ['not met: amount at most $50.00', 'not met: payment not disputed'],
      'not met: amount at most $50.00 · not met: payment not disputed',
    ],
    ['a refusal: no rule failed, so its why', escalation({ reason: 'stale_premise', why: 'a fact changed', detail: 'REFUSED:stale_premise', failed_rules: [] }), [], 'a fact changed'],
    ['a why missing: the plain words of its reason', escalation({ reason: 'ambiguous', why: '', detail: 'AMBIGUOUS' }), [], 'a crash left it unknowable whether it was sent, and there is no way to check'],
  ])('%s', (_what, given, words, why) => {
    expect(failedRuleWords(given)).toEqual(words);
    expect(escalationWhy(given)).toBe(why);
  });
});
