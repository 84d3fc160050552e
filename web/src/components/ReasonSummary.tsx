import type { InboxItem } from '../../../shared/api.ts';
import { FAILED_RULES_SEPARATOR, failedRuleWords } from '../../../shared/escalation-words.ts';
import { whyFor } from '../../../shared/statuses.ts';
import { describeChange } from './FactTable.tsx';

/**
 * Why a person has to look at this, in plain words: how each rule failed ("over $50.00 · disputed
 * · flag: vip", as the escalation worded them when the rules ran), or the reason, and what changed.
 * Addressed to the approver who decides it; a reader who decides nothing (finance) is told it needs a person.
 */
export function ReasonSummary({ item, currency, reader = false }: { item: InboxItem; currency: string | null; reader?: boolean }) {
  const failed = failedRuleWords(item);
  const who = reader ? 'Needs a person' : 'Needs you';
  return (
    <div className="reason">
      {failed.length > 0 ? (
        <p className="reason-why">
          <span className="reason-label">{who}: </span>
          <span className="failed-rules" data-failed-rules="">
            {failed.join(FAILED_RULES_SEPARATOR)}
          </span>
        </p>
      ) : (
        <p className="reason-why">
          <span className="reason-label">{who} because </span>
          {item.why || whyFor(item.reason)}.
        </p>
      )}
      {item.changes.length > 0 && (
        <ul className="rule-list" aria-label="What changed">
          {item.changes.map((change) => (
            <li key={change.field} className="rule-changed">
              <span aria-hidden="true">⟳ </span>
              {describeChange(change, currency)}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}
