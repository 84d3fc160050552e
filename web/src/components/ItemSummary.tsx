import type { ItemDetail } from '../../../shared/api.ts';
import { formatFull, formatMoney, formatWhen, isoOf } from '../format.ts';
import { STATE_LABELS, STATE_TONES } from '../labels.ts';
import { Badge } from './StateViews.tsx';

/** The request: the amount first and largest, then which payment, who asked and why. */
export function ItemSummary({ detail, currency }: { detail: ItemDetail; currency: string | null }) {
  const { request } = detail;
  const askedMs = detail.history.find((e) => e.kind === 'PROPOSED')?.ts_ms ?? null;
  const paid = typeof detail.facts_then.amount_received === 'number' ? formatMoney(detail.facts_then.amount_received, currency) : null;
  return (
    <header className="item-summary">
      <p className="eyebrow">Refund request</p>
      <h1 id="page-title" tabIndex={-1}>
        <span className="amount-xl">{formatMoney(request.amount, currency)}</span>
        <span className="sr-only"> refund, </span>
        <Badge tone={STATE_TONES[detail.state]} className="state-badge">
          {STATE_LABELS[detail.state]}
        </Badge>
      </h1>
      {paid && <p className="muted">of a {paid} payment</p>}
      <dl className="request-facts">
        <div>
          <dt>Request</dt>
          <dd className="mono">{request.id}</dd>
        </div>
        <div>
          <dt>Payment intent</dt>
          <dd className="mono">{request.payment_intent}</dd>
        </div>
        <div>
          <dt>Agent</dt>
          <dd>{request.agent}</dd>
        </div>
        {askedMs !== null && (
          <div>
            <dt>Asked</dt>
            <dd>
              <time dateTime={isoOf(askedMs)} title={formatFull(askedMs)}>
                {formatWhen(askedMs)}
              </time>
            </dd>
          </div>
        )}
        {request.repair_of && (
          <div>
            <dt>Repair of</dt>
            <dd className="mono">{request.repair_of}</dd>
          </div>
        )}
        {request.flags.length > 0 && (
          <div>
            <dt>Flags</dt>
            <dd>{request.flags.join(', ')}</dd>
          </div>
        )}
      </dl>
      {request.reason && (
        <blockquote className="agent-quote">
          <p>“{request.reason}”</p>
          <footer>the agent’s reason</footer>
        </blockquote>
      )}
    </header>
  );
}
