import type { ItemDetail, SessionInfo } from '../../../shared/api.ts';
import type { WhyCode } from '../../../shared/statuses.ts';
import { formatMoney } from '../format.ts';
import { ACTION_LABELS, levelLabel, STATE_SENTENCES } from '../labels.ts';
import type { PendingDecision } from './ConfirmDialog.tsx';

/** The reason of an item whose send may or may not have happened: it can only be closed. */
const AMBIGUOUS: WhyCode = 'ambiguous';

interface DecisionPanelProps {
  detail: ItemDetail;
  session: SessionInfo;
  currency: string | null;
  onChoose: (pending: PendingDecision) => void;
}

/** The decisions this person may take now, each a button that opens the confirmation. */
export function DecisionPanel({ detail, session, currency, onChoose }: DecisionPanelProps) {
  const item = detail.item;
  const amount = formatMoney(detail.request.amount, currency);
  const base = { amountCents: detail.request.amount, currency, paymentIntent: detail.request.payment_intent, requestId: detail.request.id };

  if (!item || !detail.may_decide) {
    const elsewhere = item && !session.groups.includes(item.group);
    return (
      <section className="panel decision-panel" aria-labelledby="decide-title">
        <h2 id="decide-title">Decision</h2>
        <p className="decide-closed">
          {elsewhere
            ? `It is with ${item.group} now (${levelLabel(item.level)}). Only its members can decide it.`
            : `Nothing to decide. ${STATE_SENTENCES[detail.state]}`}
        </p>
      </section>
    );
  }

  const ambiguous = item.reason === AMBIGUOUS;
  const changed = detail.changes.length > 0 || item.changes.length > 0;
  const hasRepairs = item.repairs.length > 0;
  return (
    <section className="panel decision-panel" aria-labelledby="decide-title">
      <h2 id="decide-title">Your decision</h2>
      <p className="decide-lede">
        For <strong>{item.group}</strong>. Each choice asks you to confirm first.
      </p>
      {item.repairs.map((repair, index) => (
        <button
          key={`${repair.code}-${repair.set.amount ?? 'same'}`}
          type="button"
          className="button primary wide decide-button repair-button"
          aria-keyshortcuts={index === 0 ? 'p' : undefined}
          onClick={() => onChoose({ ...base, action: 'repair', repairIndex: index, repair })}
        >
          <span className="decide-main">
            {ACTION_LABELS.repair}: {repair.why}
          </span>
          {index === 0 && <span className="key-hint" aria-hidden="true">p</span>}
        </button>
      ))}
      {!ambiguous && (
        <>
          {changed && (
            <p className="decide-warning">
              The facts changed since the agent asked. Approving the original {amount} is checked again against Stripe and may be
              refused.
            </p>
          )}
          <button
            type="button"
            className={`button wide decide-button ${hasRepairs ? '' : 'primary'}`}
            aria-keyshortcuts="a"
            onClick={() => onChoose({ ...base, action: 'approve' })}
          >
            <span className="decide-main">
              {ACTION_LABELS.approve} {amount}
            </span>
            <span className="key-hint" aria-hidden="true">a</span>
          </button>
          <button type="button" className="button wide decide-button danger-outline" aria-keyshortcuts="r" onClick={() => onChoose({ ...base, action: 'reject' })}>
            <span className="decide-main">{ACTION_LABELS.reject}</span>
            <span className="key-hint" aria-hidden="true">r</span>
          </button>
        </>
      )}
      {ambiguous && (
        <>
          <p className="decide-warning">This refund may already have reached Stripe. Check the payment there, then close it: it is never resent.</p>
          <button type="button" className="button wide decide-button danger" aria-keyshortcuts="x" onClick={() => onChoose({ ...base, action: 'close' })}>
            <span className="decide-main">{ACTION_LABELS.close} without sending</span>
            <span className="key-hint" aria-hidden="true">x</span>
          </button>
        </>
      )}
    </section>
  );
}
