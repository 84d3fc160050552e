import type { ItemDetail } from '../../../shared/api.ts';
import { entryAppTimes } from '../app-time.ts';
import { useDirectory } from '../directory.ts';
import { beneficiaryName, formatFull, formatMoney, formatWhen, isoOf } from '../format.ts';
import { OUTCOME_LABELS, OUTCOME_TONES, STATE_LABELS, STATE_TONES } from '../labels.ts';
import { Badge } from './StateViews.tsx';

/** A link to the agent's ticket, only when it is http(s): anything else (javascript:, data:) is never made a link. */
export function safeContextUrl(value: string | undefined): URL | null {
  if (!value) return null;
  try {
    const url = new URL(value);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url : null;
  } catch {
    return null;
  }
}

/** The agent's side of the story: its reason in its words, and the ticket or conversation behind the request. */
function AgentContext({ reason, contextUrl }: { reason: string | undefined; contextUrl: string | undefined }) {
  const link = safeContextUrl(contextUrl);
  if (!reason && !contextUrl) return null;
  return (
    <blockquote className="agent-quote">
      {reason ? <p>“{reason}”</p> : <p className="muted">The agent gave no reason.</p>}
      <footer>
        the agent’s reason
        {link && (
          <>
            {' · '}
            <a className="context-link" href={link.href} target="_blank" rel="noopener noreferrer">
              Ticket on {link.host}
              <span className="sr-only"> (opens in a new tab)</span> ↗
            </a>
          </>
        )}
        {contextUrl && !link && <> · its link is not shown: only http and https links open from here</>}
      </footer>
    </blockquote>
  );
}

/** The request: the amount first and largest, then which payment, who asked and why. */
export function ItemSummary({ detail, currency, appNowMs }: { detail: ItemDetail; currency: string | null; appNowMs: number }) {
  const { request } = detail;
  const { displayName } = useDirectory();
  const proposal = detail.history.findIndex((e) => e.kind === 'PROPOSED');
  // On the application clock, as the deadlines and the history are.
  const askedMs = proposal < 0 ? null : (entryAppTimes(detail.history)[proposal] ?? null);
  const paid = typeof detail.facts_then.amount_received === 'number' ? formatMoney(detail.facts_then.amount_received, currency) : null;
  return (
    <header className="item-summary">
      <p className="eyebrow">Refund request</p>
      <h1 id="page-title" tabIndex={-1}>
        <span className="amount-xl">{formatMoney(request.amount, currency)}</span>
        <span className="sr-only"> refund, </span>
        {/* A closed item says how it closed, in the words the ledger and the Closed list use. */}
        <Badge tone={detail.state === 'CLOSED' ? OUTCOME_TONES[detail.outcome] : STATE_TONES[detail.state]} className="state-badge">
          {detail.state === 'CLOSED' ? OUTCOME_LABELS[detail.outcome] : STATE_LABELS[detail.state]}
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
        {request.on_behalf_of && (
          <div>
            <dt>Made for</dt>
            <dd className="made-for">{beneficiaryName(request.on_behalf_of, displayName)}</dd>
          </div>
        )}
        {askedMs !== null && (
          <div>
            <dt>Asked</dt>
            <dd>
              <time dateTime={isoOf(askedMs)} title={formatFull(askedMs)}>
                {formatWhen(askedMs, appNowMs)}
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
      <AgentContext reason={request.reason} contextUrl={request.context_url} />
    </header>
  );
}
