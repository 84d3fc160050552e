import { type FormEvent, type ReactNode, useEffect, useState } from 'react';
import { LEDGER_OUTCOMES, type LedgerConfirmation, type LedgerPage as LedgerAnswer, type LedgerRow, type LedgerTotals } from '../../../shared/ledger.ts';
import { callApi, messageOf } from '../api-client.ts';
import { useDirectory } from '../directory.ts';
import { beneficiaryName, formatFull, formatMoney } from '../format.ts';
import { useDocumentTitle } from '../hooks.ts';
import { OUTCOME_LABELS, OUTCOME_MEANINGS, OUTCOME_TONES } from '../labels.ts';
import { navigate } from '../router.ts';
import { LedgerTotalsPanel, type TotalsLoad } from './LedgerTotals.tsx';
import { Badge, EmptyState, ErrorState, LoadingState } from './StateViews.tsx';
import '../ledger.css';

/** The filters the ledger takes, as the address bar and the API name them. */
const FILTER_KEYS = ['from_ms', 'to_ms', 'agent', 'group', 'status', 'currency', 'outcome'] as const;
type FilterKey = (typeof FILTER_KEYS)[number];
type Filters = Record<FilterKey, string>;

/** Statuses offered in the picker: the ones finance asks about most; any other can be typed in the address. */
const STATUS_CHOICES = ['COMMITTED', 'QUEUED', 'APPROVED', 'IN_FLIGHT', 'CLOSED', 'AMBIGUOUS', 'REFUSED:stale_premise'] as const;

const CONFIRMATION_LABELS: Record<LedgerConfirmation, string> = {
  not_sent: 'Not sent',
  unconfirmed: 'Sent, no word from Stripe yet',
  pending: 'Pending at Stripe',
  succeeded: 'Confirmed by Stripe',
  failed: 'Failed at Stripe',
  canceled: 'Canceled at Stripe',
};

const ROWS_PER_PAGE = 50;
const DAY_MS = 86_400_000;

/** The filters and the page's cursor in the address bar, so a reload or a shared link shows the same rows. */
function readAddress(): { filters: Filters; cursor: string } {
  const params = new URLSearchParams(window.location.search);
  const filters = Object.fromEntries(FILTER_KEYS.map((key) => [key, params.get(key) ?? ''])) as Filters;
  return { filters, cursor: params.get('cursor') ?? '' };
}

function queryOf(filters: Filters, cursor = ''): string {
  const params = new URLSearchParams();
  for (const key of FILTER_KEYS) if (filters[key]) params.set(key, filters[key]);
  if (cursor) params.set('cursor', cursor);
  return params.toString();
}

/** A day in the date picker (UTC) as the ms the API takes, and back. */
const dayToMs = (day: string) => (day ? String(Date.parse(`${day}T00:00:00Z`)) : '');
const msToDay = (ms: string) => (ms ? new Date(Number(ms)).toISOString().slice(0, 10) : '');

type Load = { phase: 'loading' } | { phase: 'error'; message: string } | { phase: 'ready'; page: LedgerAnswer };

/**
 * Finance's refund ledger: one row per request, newest first, filtered by period, agent, group,
 * status and currency, a page at a time by cursor, and the same rows as a CSV download.
 */
export function LedgerPage() {
  const [{ filters, cursor }, setView] = useState(readAddress);
  const [draft, setDraft] = useState<Filters>(filters);
  /** The cursors of the pages before this one, to go back. */
  const [previous, setPrevious] = useState<string[]>([]);
  const [load, setLoad] = useState<Load>({ phase: 'loading' });
  const [attempt, setAttempt] = useState(0);
  const [totals, setTotals] = useState<TotalsLoad>({ phase: 'loading' });
  useDocumentTitle('Ledger');

  useEffect(() => {
    if (attempt < 0) return;
    const query = queryOf(filters);
    let stale = false;
    setTotals({ phase: 'loading' });
    callApi<LedgerTotals>('GET', `/api/ledger/totals${query ? `?${query}` : ''}`).then(
      (found) => !stale && setTotals({ phase: 'ready', totals: found }),
      (error: unknown) => !stale && setTotals({ phase: 'error', message: messageOf(error) }),
    );
    return () => {
      stale = true;
    };
  }, [filters, attempt]);

  useEffect(() => {
    // A retry (attempt) reads the same page again.
    if (attempt < 0) return;
    const query = queryOf(filters, cursor);
    navigate(query ? `/ledger?${query}` : '/ledger', { replace: true });
    let stale = false;
    setLoad({ phase: 'loading' });
    callApi<LedgerAnswer>('GET', `/api/ledger?limit=${ROWS_PER_PAGE}${query ? `&${query}` : ''}`).then(
      (page) => !stale && setLoad({ phase: 'ready', page }),
      (error: unknown) => !stale && setLoad({ phase: 'error', message: messageOf(error) }),
    );
    return () => {
      stale = true;
    };
  }, [filters, cursor, attempt]);

  const handleApply = (event: FormEvent) => {
    event.preventDefault();
    setPrevious([]);
    setView({ filters: draft, cursor: '' });
  };
  const handleClear = () => {
    const none = Object.fromEntries(FILTER_KEYS.map((key) => [key, ''])) as Filters;
    setDraft(none);
    setPrevious([]);
    setView({ filters: none, cursor: '' });
  };
  const handleOlder = (next: string) => {
    setPrevious([...previous, cursor]);
    setView({ filters, cursor: next });
  };
  const handleNewer = () => {
    setView({ filters, cursor: previous.at(-1) ?? '' });
    setPrevious(previous.slice(0, -1));
  };
  const set = (key: FilterKey) => (value: string) => setDraft({ ...draft, [key]: value });
  const csvQuery = queryOf(filters);

  let body: ReactNode;
  if (load.phase === 'loading') body = <LoadingState label="Loading the ledger…" />;
  else if (load.phase === 'error') body = <ErrorState title="The ledger could not be loaded" message={load.message} onRetry={() => setAttempt((n) => n + 1)} />;
  else if (load.page.rows.length === 0) {
    body = (
      <EmptyState title="No request matches" icon="∅">
        <p>No refund request matches these filters. Clear them to see every request.</p>
      </EmptyState>
    );
  } else body = <LedgerTable rows={load.page.rows} />;

  return (
    <section className="page" aria-labelledby="page-title">
      <h1 id="page-title" tabIndex={-1}>
        Ledger
      </h1>
      <p className="lede">
        Every refund request, newest first: what was asked, what Stripe refunded (a refund Stripe reported failed or canceled returned nothing, and is shown apart),
        how it ended, who decided and why, and its receipt.
      </p>
      <form className="ledger-filters" onSubmit={handleApply} aria-label="Filter the ledger">
        <DateField label="From (UTC)" value={msToDay(draft.from_ms)} onChange={(day) => set('from_ms')(dayToMs(day))} />
        <DateField label="To (UTC, inclusive)" value={msToDay(draft.to_ms)} onChange={(day) => set('to_ms')(day ? String(Number(dayToMs(day)) + DAY_MS) : '')} dayBefore />
        <TextField label="Agent" value={draft.agent} onChange={set('agent')} />
        <TextField label="Group" value={draft.group} onChange={set('group')} />
        <label className="field">
          <span>Outcome</span>
          <select value={draft.outcome} onChange={(event) => set('outcome')(event.target.value)}>
            <option value="">Any outcome</option>
            {LEDGER_OUTCOMES.map((outcome) => (
              <option key={outcome} value={outcome} title={OUTCOME_MEANINGS[outcome]}>
                {OUTCOME_LABELS[outcome]}
              </option>
            ))}
          </select>
        </label>
        <label className="field">
          <span>Agent's status</span>
          <select value={draft.status} onChange={(event) => set('status')(event.target.value)}>
            <option value="">Any status</option>
            {STATUS_CHOICES.map((status) => (
              <option key={status} value={status}>
                {status}
              </option>
            ))}
          </select>
        </label>
        <TextField label="Currency" value={draft.currency} onChange={(value) => set('currency')(value.toLowerCase())} placeholder="usd" />
        <div className="ledger-actions">
          <button type="submit" className="button primary">
            Apply filters
          </button>
          <button type="button" className="button ghost" onClick={handleClear}>
            Clear
          </button>
          <a className="button" href={`/api/ledger.csv${csvQuery ? `?${csvQuery}` : ''}`} download>
            Download CSV
          </a>
        </div>
      </form>
      <LedgerTotalsPanel load={totals} />
      {body}
      <nav className="ledger-paging" aria-label="Ledger pages">
        <button type="button" className="button" onClick={handleNewer} disabled={cursor === ''}>
          Newer
        </button>
        <button
          type="button"
          className="button"
          onClick={() => load.phase === 'ready' && load.page.next_cursor !== null && handleOlder(load.page.next_cursor)}
          disabled={load.phase !== 'ready' || load.page.next_cursor === null}
        >
          Older
        </button>
      </nav>
    </section>
  );
}

function TextField({ label, value, onChange, placeholder }: { label: string; value: string; onChange: (value: string) => void; placeholder?: string }) {
  return (
    <label className="field">
      <span>{label}</span>
      <input type="text" value={value} placeholder={placeholder} onChange={(event) => onChange(event.target.value.trim())} />
    </label>
  );
}

/** A day picker; with `dayBefore`, the bound is the next midnight, so the day shown is the last day included. */
function DateField({ label, value, onChange, dayBefore = false }: { label: string; value: string; onChange: (day: string) => void; dayBefore?: boolean }) {
  const shown = dayBefore && value ? new Date(Date.parse(`${value}T00:00:00Z`) - DAY_MS).toISOString().slice(0, 10) : value;
  return (
    <label className="field">
      <span>{label}</span>
      <input type="date" value={shown} onChange={(event) => onChange(event.target.value)} />
    </label>
  );
}

function decidedBy(row: LedgerRow, displayNameOf: (login: string) => string): string {
  if (row.decided_by_kind === 'policy') return `Policy${row.policy_rules.length ? ` (${row.policy_rules.join('; ')})` : ''}`;
  if (row.decided_by_kind === 'person') {
    // Two approvers (four-eyes): both, the earlier first, as the receipt names them.
    const earlier = row.approved_by_logins.filter((login) => login !== row.decided_by_login).map((login) => `${displayNameOf(login)} (${login})`);
    return [...earlier, `${row.decided_by} (${row.decided_by_login})`].join(' and ');
  }
  return 'Nobody yet';
}

function LedgerTable({ rows }: { rows: LedgerRow[] }) {
  const { displayName } = useDirectory();
  return (
    <div className="table-scroll">
      <table className="ledger-table">
        <thead>
          <tr>
            <th scope="col">Request</th>
            <th scope="col">Agent</th>
            <th scope="col">Asked</th>
            <th scope="col">Refunded</th>
            <th scope="col">Outcome</th>
            <th scope="col">Decided by</th>
            <th scope="col">Decided at</th>
            <th scope="col">Stripe</th>
            <th scope="col">Receipt</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((row) => (
            <tr key={row.effect_id} data-outcome={row.outcome}>
              <th scope="row">
                <span className="mono">{row.request_id}</span>
                <span className="ledger-sub mono">{row.payment_intent}</span>
                {row.beneficiary && <span className="ledger-sub made-for">Made for {beneficiaryName(row.beneficiary, displayName)}</span>}
              </th>
              <td>{row.agent}</td>
              <td className="num">{formatMoney(row.amount_asked_minor, row.currency)}</td>
              <td className="num">
                {row.amount_sent_minor === null ? '—' : formatMoney(row.amount_sent_minor, row.currency)}
                {row.amount_failed_minor !== null && <span className="ledger-sub ledger-failed">{formatMoney(row.amount_failed_minor, row.currency)} sent, failed at Stripe</span>}
              </td>
              <td>
                <Badge tone={OUTCOME_TONES[row.outcome]}>{OUTCOME_LABELS[row.outcome]}</Badge>
                {row.reject_reason && <span className="ledger-reason">Why: {row.reject_reason}</span>}
                <span className="ledger-sub">
                  agent told <span className="mono">{row.status}</span>
                </span>
              </td>
              <td>{decidedBy(row, displayName)}</td>
              <td>{row.decided_at_ms === null ? '—' : formatFull(row.decided_at_ms)}</td>
              <td>
                {CONFIRMATION_LABELS[row.confirmation]}
                {row.confirmed_via && <span className="ledger-sub">by {row.confirmed_via}</span>}
                {row.refund_id && <span className="ledger-sub mono">{row.refund_id}</span>}
              </td>
              <td>
                <a href={row.receipt_url} download>
                  Receipt<span className="sr-only"> of {row.request_id}</span>
                </a>
                <span className="ledger-sub mono">{row.effect_id}</span>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
