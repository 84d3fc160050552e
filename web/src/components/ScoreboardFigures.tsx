import type { ReactNode } from 'react';
import type { MoneyFigures, Scoreboard } from '../../../shared/api.ts';
import { COUNT_ORDER, currencyName, FIGURES, formatCount, formatMinor, formatShare, formatWait, MONEY_FIGURES, MONEY_ORDER } from '../scoreboard-copy.ts';

/** A figure's number, marked with its key and raw value so a test can hold it against the API. */
function Value({ figure, value, children }: { figure: string; value: number | null; children: ReactNode }) {
  return (
    <span data-figure={figure} data-value={value === null ? '' : String(value)}>
      {children}
    </span>
  );
}

interface CardProps {
  figure: keyof Scoreboard;
  value: number;
  label?: string;
  shown?: string;
  tone?: 'success' | 'warning' | 'danger' | 'neutral';
  children?: ReactNode;
}

function FigureCard({ figure, value, label = FIGURES[figure].label, shown = formatCount(value), tone = 'neutral', children }: CardProps) {
  return (
    <li className={`figure-card figure-${tone}`}>
      <span className="figure-label">{label}</span>
      <span className="figure-value">
        <Value figure={figure} value={value}>
          {shown}
        </Value>
      </span>
      {children && <span className="figure-sub">{children}</span>}
    </li>
  );
}

/** A bar showing a share out of one; the share itself is in the text beside it. */
function ShareMeter({ share }: { share: number }) {
  return (
    <svg className="share-meter" viewBox="0 0 100 6" preserveAspectRatio="none" aria-hidden="true" focusable="false">
      <rect className="share-track" x={0} y={0} width={100} height={6} rx={3} />
      {share > 0 && <rect className="share-fill" x={0} y={0} width={Math.max(3, share * 100)} height={6} rx={3} />}
    </svg>
  );
}

/** The headline figures: what finance reads first. */
export function HeadlineFigures({ board }: { board: Scoreboard }) {
  const unverified = board.cleared_no_person - board.cleared_verified;
  const times = board.time_to_decision;
  return (
    <ul className="figure-grid">
      <FigureCard figure="requests" value={board.requests}>
        asked for by agents
      </FigureCard>
      <FigureCard figure="cleared_no_person" value={board.cleared_no_person} tone={board.cleared_no_person > 0 ? 'success' : 'neutral'}>
        <Value figure="no_person_share" value={board.no_person_share}>
          {formatShare(board.no_person_share)}
        </Value>{' '}
        of requests
        <ShareMeter share={board.no_person_share} />
      </FigureCard>
      <FigureCard figure="cleared_verified" value={board.cleared_verified} tone={unverified > 0 ? 'danger' : 'neutral'}>
        {unverified > 0 ? `${formatCount(unverified)} of ${formatCount(board.cleared_no_person)} do not verify` : `of ${formatCount(board.cleared_no_person)} cleared with no person`}
      </FigureCard>
      <FigureCard figure="sent_after_person" value={board.sent_after_person}>
        authorized by a person
      </FigureCard>
      <FigureCard figure="escalated" value={board.escalated}>
        put in front of a person
      </FigureCard>
      <FigureCard figure="rejected" value={board.rejected}>
        never sent
      </FigureCard>
      <FigureCard figure="open" value={board.open} tone={board.open > 0 ? 'warning' : 'neutral'}>
        waiting for a person now
      </FigureCard>
      <FigureCard figure="sla_breaches" value={board.sla_breaches} tone={board.sla_breaches > 0 ? 'danger' : 'neutral'}>
        {board.sla_breaches > 0 ? 'deadlines missed' : 'no deadline missed'}
      </FigureCard>
      <FigureCard figure="confirmed_by_target" value={board.confirmed_by_target}>
        <Value figure="unconfirmed_sent" value={board.unconfirmed_sent}>
          {formatCount(board.unconfirmed_sent)}
        </Value>{' '}
        sent, still unconfirmed
      </FigureCard>
      <li className="figure-card figure-neutral">
        <span className="figure-label">Time to decision, median</span>
        <span className="figure-value">
          <Value figure="time_to_decision.median_ms" value={times.median_ms}>
            {formatWait(times.median_ms)}
          </Value>
          {times.median_ms === null && <span className="sr-only">: no decisions yet</span>}
        </span>
        <span className="figure-sub">
          {times.n === 0 && <span className="figure-n">no decisions yet</span>}
          <span className="figure-stat">
            p90{' '}
            <Value figure="time_to_decision.p90_ms" value={times.p90_ms}>
              {formatWait(times.p90_ms)}
            </Value>
          </span>{' '}
          <span className="figure-stat">
            max{' '}
            <Value figure="time_to_decision.max_ms" value={times.max_ms}>
              {formatWait(times.max_ms)}
            </Value>
          </span>
          <span className={times.n === 0 ? 'sr-only' : 'figure-n'}>
            over{' '}
            <Value figure="time_to_decision.n" value={times.n}>
              {formatCount(times.n)}
            </Value>{' '}
            {times.n === 1 ? 'decision' : 'decisions'}
          </span>
        </span>
      </li>
    </ul>
  );
}

/** A breakdown in a table cell: the chart has it, or there is none. */
function breakdownWords(counts: Record<string, number>, charted: boolean): string {
  if (Object.keys(counts).length === 0) return 'none';
  return charted ? 'in the chart above' : Object.entries(counts).map(([key, n]) => `${key} ${formatCount(n)}`).join(', ');
}

/** Every single-number figure with its definition: the page's help, and what the CSV holds. */
export function FigureTable({ board, charted }: { board: Scoreboard; charted: boolean }) {
  const times = board.time_to_decision;
  const timeRows = [
    ['n', 'Decisions timed', times.n, FIGURES.time_to_decision.help],
    ['median_ms', 'Time to decision, median', times.median_ms, 'Half of the decisions were made faster than this.'],
    ['p90_ms', 'Time to decision, p90', times.p90_ms, 'Nine in ten decisions were made within this.'],
    ['max_ms', 'Time to decision, longest', times.max_ms, 'The longest anyone waited for a decision.'],
  ] as const;
  return (
    <table className="figure-table">
      <thead>
        <tr>
          <th scope="col">Figure</th>
          <th scope="col">Value</th>
          <th scope="col">How it is counted</th>
        </tr>
      </thead>
      <tbody>
        {COUNT_ORDER.map((key) => (
          <tr key={key}>
            <th scope="row">{FIGURES[key].label}</th>
            <td className="figure-table-value">
              <Value figure={key} value={board[key]}>
                {key === 'no_person_share' ? formatShare(board[key]) : formatCount(board[key])}
              </Value>
            </td>
            <td>{FIGURES[key].help}</td>
          </tr>
        ))}
        {timeRows.map(([key, label, value, help]) => (
          <tr key={key}>
            <th scope="row">{label}</th>
            <td className="figure-table-value">
              <Value figure={`time_to_decision.${key}`} value={value}>
                {key === 'n' ? formatCount(times.n) : formatWait(value)}
              </Value>
            </td>
            <td>{help}</td>
          </tr>
        ))}
        <tr>
          <th scope="row">{FIGURES.escalated_by_reason.label}</th>
          <td className="figure-table-value">{breakdownWords(board.escalated_by_reason, charted)}</td>
          <td>{FIGURES.escalated_by_reason.help}</td>
        </tr>
        <tr>
          <th scope="row">{FIGURES.sla_breaches_by_group.label}</th>
          <td className="figure-table-value">{breakdownWords(board.sla_breaches_by_group, charted)}</td>
          <td>{FIGURES.sla_breaches_by_group.help}</td>
        </tr>
        <tr>
          <th scope="row">{FIGURES.sla_breaches_missed_by_group.label}</th>
          <td className="figure-table-value">{breakdownWords(board.sla_breaches_missed_by_group, charted)}</td>
          <td>{FIGURES.sla_breaches_missed_by_group.help}</td>
        </tr>
      </tbody>
    </table>
  );
}

/** A money figure in one currency, marked with its key and raw minor units so a test can hold it against the API. */
function Money({ currency, field, money }: { currency: string; field: keyof MoneyFigures; money: MoneyFigures }) {
  return (
    <span data-money={`${currency}.${field}`} data-value={String(money[field])}>
      {formatMinor(money[field], currency)}
    </span>
  );
}

/** The currencies of a board, in order (the server sends them sorted). */
function currenciesOf(board: Scoreboard): [string, MoneyFigures][] {
  return Object.entries(board.money ?? {});
}

/**
 * The money headline: what was refunded (with no person, after a person), what is still open,
 * and what stale refusals and rejections kept from being sent; one line per currency, never added up.
 */
export function MoneyHeadline({ board }: { board: Scoreboard }) {
  const currencies = currenciesOf(board);
  if (currencies.length === 0) return <p className="money-none">No money moved or waits in this period.</p>;
  const cards: { key: string; field: keyof MoneyFigures; tone: string; sub: (c: string, m: MoneyFigures) => ReactNode }[] = [
    {
      key: 'refunded',
      field: 'refunded_minor',
      tone: 'success',
      sub: (c, m) => (
        <>
          <Money currency={c} field="refunded_no_person_minor" money={m} /> with no person · <Money currency={c} field="refunded_after_person_minor" money={m} />{' '}
          after a person
        </>
      ),
    },
    {
      key: 'exposure',
      field: 'exposure_minor',
      tone: 'warning',
      sub: (c, m) => (
        <>
          <Money currency={c} field="exposure_queued_minor" money={m} /> waiting · <Money currency={c} field="exposure_approved_minor" money={m} /> approved, not sent
        </>
      ),
    },
    {
      key: 'stale',
      field: 'refused_stale_minor',
      tone: 'neutral',
      sub: (c, m) => (
        <>
          <Money currency={c} field="repaired_minor" money={m} /> sent instead on repairs
        </>
      ),
    },
    { key: 'rejected', field: 'rejected_minor', tone: 'neutral', sub: () => 'never sent' },
  ];
  return (
    <ul className="figure-grid money-grid">
      {cards.map((card) => (
        <li key={card.key} className={`figure-card figure-${card.tone}`}>
          <span className="figure-label">{MONEY_FIGURES[card.field].label}</span>
          {currencies.map(([currency, money]) => (
            <span key={currency} className="money-line">
              <span className="figure-value money-value">
                <Money currency={currency} field={card.field} money={money} />
              </span>
              <span className="figure-sub">{card.sub(currency, money)}</span>
            </span>
          ))}
        </li>
      ))}
    </ul>
  );
}

/** Every money figure by currency, one column per currency (never a total across them), with how each is counted. */
export function MoneyTable({ board }: { board: Scoreboard }) {
  const currencies = currenciesOf(board);
  if (currencies.length === 0) return null;
  return (
    <div className="money-table-wrap">
      <table className="figure-table money-table">
        <caption className="money-caption">Money by currency, each in its own units and never added across currencies</caption>
        <thead>
          <tr>
            <th scope="col">Figure</th>
            {currencies.map(([currency]) => (
              <th scope="col" key={currency} className="figure-table-value">
                {currencyName(currency)}
              </th>
            ))}
            <th scope="col">How it is counted</th>
          </tr>
        </thead>
        <tbody>
          {MONEY_ORDER.map((field) => (
            <tr key={field}>
              <th scope="row">{MONEY_FIGURES[field].label}</th>
              {currencies.map(([currency, money]) => (
                <td key={currency} className="figure-table-value" data-label={currencyName(currency)}>
                  <Money currency={currency} field={field} money={money} />
                </td>
              ))}
              <td>{MONEY_FIGURES[field].help}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
