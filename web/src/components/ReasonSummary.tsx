import type { InboxItem } from '../../../shared/api.ts';
import { whyFor } from '../../../shared/statuses.ts';
import { describeChange } from './FactTable.tsx';

/**
 * Why a person has to look at this, in plain words: the reason, the failed rules, what changed.
 * Addressed to the approver who decides it; a reader who decides nothing (finance) is told it needs a person.
 */
export function ReasonSummary({ item, currency, reader = false }: { item: InboxItem; currency: string | null; reader?: boolean }) {
  const rules = Array.isArray(item.detail) ? item.detail.map(String) : [];
  const why = item.why || whyFor(item.reason);
  return (
    <div className="reason">
      <p className="reason-why">
        <span className="reason-label">{reader ? 'Needs a person because ' : 'Needs you because '}</span>
        {why}.
      </p>
      {rules.length > 0 && (
        <ul className="rule-list" aria-label="Failed rules">
          {rules.map((rule) => (
            <li key={rule} className="rule-failed">
              <span aria-hidden="true">✕ </span>
              <span className="sr-only">Failed rule: </span>
              {rule}
            </li>
          ))}
        </ul>
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
