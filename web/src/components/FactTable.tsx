import type { ItemDetail } from '../../../shared/api.ts';
import type { Change } from '../../../shared/entries.ts';
import type { Json, JsonObject } from '../../../shared/json.ts';
import { jsonEqual } from '../../../shared/json.ts';
import { formatMoney } from '../format.ts';
import { humanize } from '../labels.ts';

/**
 * Names for the facts the Stripe refunds target records (server/targets/stripe-refunds.ts,
 * PaymentFacts). A fact not listed here still shows, under its own name.
 */
const FACT_LABELS: Record<string, string> = {
  payment_intent: 'Payment intent',
  currency: 'Currency',
  amount_received: 'Amount paid',
  refunded_by_others: 'Already refunded by others',
  refunded_outside: '… of it outside Interlock',
  disputed: 'Disputed',
};
/** Facts that are amounts of money in the payment's smallest unit. */
const MONEY_FACTS = new Set(['amount_received', 'refunded_by_others', 'refunded_outside']);

export function factLabel(field: string): string {
  return FACT_LABELS[field] ?? humanize(field);
}

/** A fact's value for a person: money with its currency, yes/no, or the text itself. */
export function factValue(field: string, value: Json | undefined, currency: string | null): string {
  if (value === undefined || value === null) return '—';
  if (MONEY_FACTS.has(field) && typeof value === 'number') return formatMoney(value, currency);
  if (typeof value === 'boolean') return value ? 'Yes' : 'No';
  if (field === 'currency' && typeof value === 'string') return value.toUpperCase();
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** One change as a line: `Already refunded by others: $0.00 → $30.00`. */
export function describeChange(change: Change, currency: string | null): string {
  return `${factLabel(change.field)}: ${factValue(change.field, change.was, currency)} → ${factValue(change.field, change.now, currency)}`;
}

function leftToRefund(facts: JsonObject | null, sentMinor = 0): number | null {
  if (!facts || typeof facts.amount_received !== 'number' || typeof facts.refunded_by_others !== 'number') return null;
  return facts.amount_received - facts.refunded_by_others - sentMinor;
}

/**
 * What this request itself refunded, by the journal: the amount it sent once it committed, none
 * when Stripe then reported the refund failed or canceled; null while nothing of it went out.
 * The facts read now leave a request's own refund out (they are the facts its decision is judged
 * on), so a done item adds it back to say what is left after it.
 */
export function sentByThisRequest(detail: ItemDetail): number | null {
  const { history } = detail;
  if (!history.some((e) => e.kind === 'COMMITTED')) return null;
  const failed = history.some((e) => e.kind === 'CONFIRMED' && (e.status === 'failed' || e.status === 'canceled'));
  const dispatched = history.findLast((e) => e.kind === 'DISPATCHED');
  const amount = dispatched?.kind === 'DISPATCHED' ? dispatched.effect.amount : undefined;
  if (failed || typeof amount !== 'number') return failed ? 0 : null;
  return amount;
}

interface FactTableProps {
  then: JsonObject;
  now: JsonObject | null;
  nowError: string | null;
  changes: Change[];
  currency: string | null;
  /** What this request refunded itself (sentByThisRequest): the facts now are shown after it. */
  sentMinor: number | null;
}

/** The order an approver reads the facts in: which payment, what was paid, what happened to it since. */
const FACT_ORDER = ['payment_intent', 'currency', 'amount_received', 'refunded_by_others', 'refunded_outside', 'disputed'];

/** Facts the page already shows above the table (the summary, the payment): repeated here only when they changed. */
const SHOWN_ELSEWHERE = new Set(['payment_intent', 'currency']);

/** Known facts in reading order, then any others in the order they came (stored facts come sorted by key). */
function factOrder(fields: string[]): string[] {
  const rank = (field: string) => {
    const at = FACT_ORDER.indexOf(field);
    return at < 0 ? FACT_ORDER.length : at;
  };
  return fields.map((field, i) => ({ field, i })).sort((a, b) => rank(a.field) - rank(b.field) || a.i - b.i).map((x) => x.field);
}

/** The facts when the agent asked, next to the facts read from Stripe now; what changed stands out. */
export function FactTable({ then, now, nowError, changes, currency, sentMinor }: FactTableProps) {
  const fields = factOrder([...new Set([...Object.keys(then), ...Object.keys(now ?? {})])]);
  const changed = new Set(changes.map((c) => c.field));
  for (const field of fields) if (now && !jsonEqual(then[field], now[field])) changed.add(field);
  const leftThen = leftToRefund(then);
  const leftNow = leftToRefund(now, sentMinor ?? 0);
  // Which payment and in what currency never change under a request, and the summary and the payment say them.
  const rows = fields
    .filter((field) => changed.has(field) || !SHOWN_ELSEWHERE.has(field))
    .map((field) => ({
    field,
    label: factLabel(field),
    before: factValue(field, then[field], currency),
    after: now ? factValue(field, now[field], currency) : null,
    changed: changed.has(field),
    mono: field === 'payment_intent',
  }));
  if (sentMinor !== null) {
    // Not a change behind anyone's back: the refund this request was for.
    rows.push({
      field: 'sent_by_this_request',
      label: 'Refunded by this request',
      before: formatMoney(0, currency),
      after: formatMoney(sentMinor, currency),
      changed: false,
      mono: false,
    });
  }
  if (leftThen !== null) {
    rows.push({
      field: 'left_to_refund',
      label: sentMinor === null ? 'Left to refund (paid − refunded)' : 'Left to refund (paid − refunded, this request’s refund too)',
      before: formatMoney(leftThen, currency),
      after: leftNow === null ? null : formatMoney(leftNow, currency),
      // Changed behind the request's back: its own refund is no change.
      changed: leftNow !== null && leftToRefund(now) !== leftThen,
      mono: false,
    });
  }
  return (
    <div className="fact-table-wrap">
      {nowError && (
        <p className="notice notice-warning" role="status">
          {nowError}
        </p>
      )}
      <table className="fact-table">
        <caption className="sr-only">Facts at request time and now</caption>
        <thead>
          <tr>
            <th scope="col">Fact</th>
            <th scope="col">
              <span className="long-label">When the agent asked</span>
              <span className="short-label">Asked</span>
            </th>
            <th scope="col">
              <span className="long-label">{sentMinor === null ? 'Now, from Stripe' : 'Now, from Stripe, after this refund'}</span>
              <span className="short-label">Now</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {rows.map((row) => (
            <tr key={row.field} className={row.changed ? 'changed' : undefined} data-fact={row.field}>
              <th scope="row">
                {row.label}
                {row.changed && <span className="changed-tag">Changed</span>}
              </th>
              <td className={row.mono ? 'mono' : undefined}>{row.before}</td>
              <td className={row.mono ? 'mono' : undefined}>
                {row.after === null ? (
                  <span className="muted">could not be read</span>
                ) : row.changed ? (
                  <span className="was-now">
                    <span className="was">{row.before}</span>
                    {' '}
                    <span role="img" aria-label="changed to">
                      →
                    </span>{' '}
                    <strong className="now">{row.after}</strong>
                  </span>
                ) : (
                  row.after
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
