import type { PaymentPanel as Payment, PaymentRefund } from '../../../shared/api.ts';
import { pastWallToAppMs, wallToAppMs } from '../app-time.ts';
import { formatDuration, formatFull, formatMinute, formatMoney, formatWhen, isoOf } from '../format.ts';
import { humanize } from '../labels.ts';
import { Badge } from './StateViews.tsx';

/** Card brands as Stripe names them (`visa`, `amex`), in the words on the card. */
const BRANDS: Readonly<Record<string, string>> = {
  amex: 'American Express',
  diners: 'Diners Club',
  discover: 'Discover',
  eftpos_au: 'eftpos',
  jcb: 'JCB',
  mastercard: 'Mastercard',
  unionpay: 'UnionPay',
  visa: 'Visa',
};

function brandOf(brand: string): string {
  return BRANDS[brand] ?? humanize(brand);
}

/** How this page puts Stripe's wall-clock times on the application clock (app-time.ts). */
interface Clock {
  gaps: readonly { wallMs: number; gapMs: number }[];
  offsetMs: number;
  appNowMs: number;
}

interface PaymentPanelProps {
  payment: Payment | null;
  error: string | null;
  clock: Clock;
}

/** A past wall-clock moment from Stripe, shown on the application clock like every other time on the page. */
function StripeTime({ wallMs, clock }: { wallMs: number; clock: Clock }) {
  const ms = pastWallToAppMs(wallMs, clock.gaps, clock.offsetMs);
  const { appNowMs } = clock;
  return (
    <time dateTime={isoOf(ms)} title={formatFull(ms)}>
      {formatWhen(ms, appNowMs)}
    </time>
  );
}

function RefundLine({ refund, currency, clock }: { refund: PaymentRefund; currency: string; clock: Clock }) {
  return (
    <li className="payment-refund" data-by={refund.by}>
      <span className="payment-refund-amount">{formatMoney(refund.amount, currency)}</span>{' '}
      <span>
        {refund.by === 'interlock' ? (
          <>
            by Interlock{refund.request_id ? (
              <>
                {' '}
                for request <span className="mono">{refund.request_id}</span>
              </>
            ) : null}
          </>
        ) : (
          <strong>outside Interlock</strong>
        )}
      </span>
      <span className="muted">
        {' · '}
        {humanize(refund.status).toLowerCase()} · <StripeTime wallMs={refund.created_ms} clock={clock} />
      </span>
      <span className="mono subtle">{refund.id}</span>
    </li>
  );
}

/** The dispute: its state, what the bank took back, and by when Stripe wants the evidence (a future time, on the application clock). */
function DisputeLine({ dispute, clock }: { dispute: NonNullable<Payment['dispute']>; clock: Clock }) {
  const dueMs = dispute.due_by_ms === null ? null : wallToAppMs(dispute.due_by_ms, clock.offsetMs);
  const open = dispute.status !== 'won' && dispute.status !== 'lost';
  return (
    <>
      <Badge tone="danger">
        <span aria-hidden="true">⚑</span>
        Disputed: {humanize(dispute.status).toLowerCase()}
        {dispute.reason ? ` (${humanize(dispute.reason).toLowerCase()})` : ''}
      </Badge>
      <span className="dispute-figures" data-testid="dispute-figures">
        <strong>{formatMoney(dispute.amount, dispute.currency)}</strong> disputed
        {dueMs !== null && open && (
          <>
            {' · evidence due '}
            <time dateTime={isoOf(dueMs)} title={formatFull(dueMs)}>
              {formatMinute(dueMs, clock.appNowMs)}
            </time>
            {dueMs > clock.appNowMs ? ` (in ${formatDuration(dueMs - clock.appNowMs)})` : ' (past due)'}
          </>
        )}
      </span>
    </>
  );
}

/** The payment as Stripe has it: who paid, with what, when, every earlier refund and by whom, any dispute. */
export function PaymentPanel({ payment, error, clock }: PaymentPanelProps) {
  if (!payment) {
    return (
      <section className="panel payment-panel" aria-labelledby="payment-title">
        <h2 id="payment-title">The payment</h2>
        <p className="muted payment-error">{error ?? 'The payment is not shown.'}</p>
      </section>
    );
  }
  const money = (cents: number) => formatMoney(cents, payment.currency);
  const refunded = payment.refunds.filter((r) => r.status !== 'failed' && r.status !== 'canceled').reduce((sum, r) => sum + r.amount, 0);
  // A read made just now: the live feed's offset is the gap that holds now.
  const asOfMs = wallToAppMs(payment.as_of_ms, clock.offsetMs);
  return (
    <section className="panel payment-panel" aria-labelledby="payment-title">
      <div className="panel-head">
        <h2 id="payment-title">The payment</h2>
        <p className="muted small-text">
          from Stripe, as of{' '}
          <time dateTime={isoOf(asOfMs)} title={formatFull(asOfMs)}>
            {formatMinute(asOfMs, clock.appNowMs)}
          </time>
        </p>
      </div>
      <dl className="payment-facts">
        <div>
          <dt>Customer</dt>
          <dd>
            {payment.customer?.name ?? <span className="muted">No name</span>}
            {payment.customer?.email && <span className="subtle">{payment.customer.email}</span>}
          </dd>
        </div>
        <div>
          <dt>Paid</dt>
          <dd>
            <strong>{money(payment.amount)}</strong>
            {payment.charged_at_ms !== null ? (
              <span className="subtle">
                charged <StripeTime wallMs={payment.charged_at_ms} clock={clock} />
              </span>
            ) : (
              <span className="subtle">no charge yet</span>
            )}
          </dd>
        </div>
        <div>
          <dt>Card</dt>
          <dd>{payment.card ? `${brandOf(payment.card.brand)} ···· ${payment.card.last4}` : <span className="muted">Not a card</span>}</dd>
        </div>
        <div>
          <dt>Dispute</dt>
          <dd>
            {payment.dispute ? <DisputeLine dispute={payment.dispute} clock={clock} /> : 'None'}
          </dd>
        </div>
      </dl>
      <h3 className="payment-subtitle">
        Earlier refunds{' '}
        <span className="muted">
          {payment.refunds.length === 0 ? '· none' : `· ${money(refunded)} of ${money(payment.amount)}`}
        </span>
      </h3>
      {payment.refunds.length > 0 && (
        <ul className="payment-refunds">
          {payment.refunds.map((refund) => (
            <RefundLine key={refund.id} refund={refund} currency={payment.currency} clock={clock} />
          ))}
        </ul>
      )}
      {payment.dashboard_url && (
        <p>
          <a href={payment.dashboard_url} target="_blank" rel="noopener noreferrer">
            Open in Stripe’s dashboard<span className="sr-only"> (opens in a new tab)</span> ↗
          </a>
        </p>
      )}
    </section>
  );
}
