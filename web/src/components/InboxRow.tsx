import type { InboxItem } from '../../../shared/api.ts';
import { itemCurrency } from '../currency.ts';
import { formatMoney } from '../format.ts';
import { levelLabel } from '../labels.ts';
import { itemPath } from '../router.ts';
import { Link } from './Link.tsx';
import { ReasonSummary } from './ReasonSummary.tsx';
import { SlaCountdown } from './SlaCountdown.tsx';
import { Badge } from './StateViews.tsx';

/** One open item: how much, for which payment, why it needs a person, where it sits, how long is left. */
export function InboxRow({ item, offsetMs, fresh }: { item: InboxItem; offsetMs: number; fresh: boolean }) {
  const currency = itemCurrency(item);
  const amount = formatMoney(item.request.amount, currency);
  const paid = typeof item.facts.amount_received === 'number' ? formatMoney(item.facts.amount_received, currency) : null;
  return (
    <li className={`inbox-row${item.breach ? ' breached' : ''}${fresh ? ' fresh' : ''}`} data-effect-id={item.effect_id} data-request-id={item.request.id}>
      <div className="row-amount">
        <Link href={itemPath(item.effect_id)} className="row-link">
          <span className="amount">{amount}</span>
          <span className="sr-only"> refund, request {item.request.id}</span>
        </Link>
        {paid && <span className="amount-of">of {paid} paid</span>}
      </div>
      <div className="row-main">
        <p className="row-ids">
          <span className="id-chip" title="Request id">
            <span className="id-label">Request</span> {item.request.id}
          </span>
          <span className="id-chip mono" title="Payment intent">
            {item.request.payment_intent}
          </span>
          <span className="row-agent">
            by <strong>{item.request.agent}</strong>
          </span>
        </p>
        <ReasonSummary item={item} currency={currency} />
        {item.request.reason && <p className="agent-reason">“{item.request.reason}”</p>}
      </div>
      <div className="row-side">
        {item.breach && (
          <Badge tone="danger" className="breach-badge">
            SLA breached
          </Badge>
        )}
        <SlaCountdown dueMs={item.due_ms} breach={item.breach} offsetMs={offsetMs} compact />
        <p className="row-group">
          <span className="group-name">{item.group}</span> <span className="muted">· {levelLabel(item.level)}</span>
        </p>
      </div>
    </li>
  );
}
