import { LEDGER_OUTCOMES, type LedgerCurrencyTotals, type LedgerTotals } from '../../../shared/ledger.ts';
import { UNKNOWN_CURRENCY } from '../../../shared/money.ts';
import { formatMoney } from '../format.ts';
import { OUTCOME_LABELS } from '../labels.ts';

/** The totals of the filter shown; they stay the same from page to page. */
export type TotalsLoad = { phase: 'loading' } | { phase: 'error'; message: string } | { phase: 'ready'; totals: LedgerTotals };

/** A currency key as the API gives it; `unknown` holds rows whose facts named none. */
const currencyOrNull = (key: string) => (key === UNKNOWN_CURRENCY ? null : key);

/** An amount with the raw figure beside it, so a check can read what is shown. */
function Money({ name, minor, currency }: { name: string; minor: number; currency: string }) {
  return (
    <span data-total={`${currency}.${name}`} data-value={minor}>
      {formatMoney(minor, currencyOrNull(currency))}
    </span>
  );
}

/**
 * Totals per currency over every row of the ledger's filter, whatever page is shown: what was
 * asked, what Stripe refunded, what failed at Stripe, and each outcome. Never added across
 * currencies.
 */
export function LedgerTotalsPanel({ load }: { load: TotalsLoad }) {
  return (
    <section className="ledger-totals" aria-labelledby="ledger-totals-title" aria-busy={load.phase === 'loading'}>
      <h2 id="ledger-totals-title">
        Totals for these filters
        {load.phase === 'ready' && (
          <span className="muted">
            {' '}
            ({load.totals.count} {load.totals.count === 1 ? 'request' : 'requests'})
          </span>
        )}
      </h2>
      {load.phase === 'loading' && <p className="muted">Adding up…</p>}
      {load.phase === 'error' && <p className="notice notice-warning">The totals could not be read: {load.message}</p>}
      {load.phase === 'ready' && Object.keys(load.totals.currencies).length === 0 && <p className="muted">No request matches these filters.</p>}
      {load.phase === 'ready' && Object.keys(load.totals.currencies).length > 0 && (
        // A region that scrolls sideways on a phone is reached by keyboard too, to scroll it: it holds nothing focusable.
        // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrollable region with nothing focusable needs a tab stop (WCAG 2.1.1, axe scrollable-region-focusable)
        <section className="table-scroll" tabIndex={0} aria-label="Totals per currency, scrollable">
          <table className="ledger-totals-table">
            <thead>
              <tr>
                <th scope="col">Currency</th>
                <th scope="col" className="num">
                  Requests
                </th>
                <th scope="col" className="num">
                  Asked
                </th>
                <th scope="col" className="num">
                  Refunded
                </th>
                <th scope="col" className="num">
                  Failed at Stripe
                </th>
                <th scope="col">By outcome (asked)</th>
              </tr>
            </thead>
            <tbody>
              {Object.entries(load.totals.currencies).map(([currency, totals]) => (
                <CurrencyRow key={currency} currency={currency} totals={totals} />
              ))}
            </tbody>
          </table>
        </section>
      )}
    </section>
  );
}

function CurrencyRow({ currency, totals }: { currency: string; totals: LedgerCurrencyTotals }) {
  const outcomes = LEDGER_OUTCOMES.filter((outcome) => totals.by_outcome[outcome].count > 0);
  return (
    <tr data-currency={currency}>
      <th scope="row">{currency === UNKNOWN_CURRENCY ? 'Not known' : currency.toUpperCase()}</th>
      <td className="num">{totals.count}</td>
      <td className="num">
        <Money name="asked_minor" minor={totals.asked_minor} currency={currency} />
      </td>
      <td className="num">
        <Money name="sent_minor" minor={totals.sent_minor} currency={currency} />
      </td>
      <td className="num">
        <Money name="failed_minor" minor={totals.failed_minor} currency={currency} />
      </td>
      <td>
        <ul className="ledger-outcome-totals">
          {outcomes.map((outcome) => (
            <li key={outcome} data-outcome={outcome}>
              {OUTCOME_LABELS[outcome]}: {totals.by_outcome[outcome].count},{' '}
              <Money name={`${outcome}.asked_minor`} minor={totals.by_outcome[outcome].asked_minor} currency={currency} />
            </li>
          ))}
        </ul>
      </td>
    </tr>
  );
}
