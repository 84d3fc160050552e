import { type FormEvent, type ReactNode, type Ref, useCallback, useEffect, useRef, useState } from 'react';
import type { ReconciliationRow, ReconciliationRun, ReconciliationRunDetail } from '../../../shared/api.ts';
import { RECONCILIATION_CATEGORIES, type ReconciliationCategory, type ReconciliationPhase } from '../../../shared/reconciliation.ts';
import { callApi, messageOf } from '../api-client.ts';
import { UNKNOWN_CURRENCY } from '../../../shared/money.ts';
import { appNowMs, appToWallMs, wallToAppMs } from '../app-time.ts';
import { formatFull, formatMoney } from '../format.ts';
import { useClockOffsetMs } from '../live.ts';
import { useDocumentTitle } from '../hooks.ts';
import type { Tone } from '../labels.ts';
import { itemPath, navigate } from '../router.ts';
import { Link } from './Link.tsx';
import { Badge, ErrorState } from './StateViews.tsx';
import '../reconciliation.css';

/** How often a running run is read again. */
const POLL_MS = 700;
const DAY_MS = 86_400_000;

/** Each category's heading, what it means, and its tone. */
const CATEGORY_COPY: Record<ReconciliationCategory, { title: string; means: string; tone: Tone }> = {
  matched: { title: 'Matched', means: 'The journal and Stripe agree: the same refund, the same amount.', tone: 'success' },
  missing_in_stripe: {
    title: 'Recorded, missing in Stripe',
    means: 'The journal says the refund was committed, and Stripe lists no refund with its effect id near the period.',
    tone: 'danger',
  },
  amount_mismatch: { title: 'Amounts differ', means: 'Both sides have the refund, with different amounts.', tone: 'danger' },
  by_hand: {
    title: 'In Stripe, not made by Interlock',
    means: 'Refunds on payments Interlock has seen, made outside it: by hand in the dashboard, or by another system.',
    tone: 'warning',
  },
  unrecorded: {
    title: 'Sent, not recorded as committed',
    means: 'Stripe holds a refund under an Interlock effect id the journal has not recorded as committed: still in flight, or ambiguous.',
    tone: 'warning',
  },
  failed_at_stripe: {
    title: 'Failed at Stripe',
    means: 'The journal says the refund was committed, and Stripe reports it failed or canceled: no money went back, so it is not counted as matched.',
    tone: 'danger',
  },
};

const dayFormat = new Intl.DateTimeFormat('en-GB', { dateStyle: 'medium' });

/** A run's period in days, the last one included: `27 Nov 2026 to 3 Dec 2026`. */
function periodWords(run: ReconciliationRun, offsetMs: number): string {
  return `${dayFormat.format(wallToAppMs(run.from_ms, offsetMs))} to ${dayFormat.format(wallToAppMs(run.to_ms, offsetMs) - 1)}`;
}

const PHASE_WORDS: Record<ReconciliationPhase, string> = {
  reading_journal: 'Reading the journal…',
  listing_stripe: "Listing Stripe's refunds, payment by payment…",
  comparing: 'Comparing…',
  finished: 'Finished.',
};

/** A day as the date input writes it, in the person's own time zone. */
function dayOf(ms: number): string {
  const d = new Date(ms);
  return `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, '0')}-${String(d.getDate()).padStart(2, '0')}`;
}

/** Local midnight at the start of a `YYYY-MM-DD` day; NaN when it is not one. */
function startOfDay(day: string): number {
  const [y, m, d] = day.split('-').map(Number);
  return y && m && d ? new Date(y, m - 1, d).getTime() : Number.NaN;
}

interface Form {
  from: string;
  to: string;
}

/** The period and run in the address bar, so a reload or a shared link shows the same run. */
function fromAddress(today: number): Form & { run: string | null } {
  const params = new URLSearchParams(window.location.search);
  return { from: params.get('from') ?? dayOf(today - 6 * DAY_MS), to: params.get('to') ?? dayOf(today), run: params.get('run') };
}

function addressOf(form: Form, run: string | null): string {
  const params = new URLSearchParams({ from: form.from, to: form.to });
  if (run) params.set('run', run);
  return `/reconciliation?${params}`;
}

/**
 * Reconciliation with Stripe: pick a period, start a run, watch it list Stripe's refunds payment
 * by payment, then read each category of refunds, with links to the item and its receipt.
 */
export function ReconciliationPage() {
  useDocumentTitle('Reconciliation');
  // Days are the application clock's, as every time on the items; Stripe is asked in wall-clock time.
  const offsetMs = useClockOffsetMs();
  const [initial] = useState(() => fromAddress(appNowMs(Date.now(), offsetMs)));
  const [form, setForm] = useState<Form>({ from: initial.from, to: initial.to });
  /** The run shown and read; `attempt` is bumped by "Try again", so the run is read afresh. */
  const [watched, setWatched] = useState<{ runId: string; attempt: number } | null>(initial.run ? { runId: initial.run, attempt: 0 } : null);
  const runId = watched?.runId ?? null;
  const setRunId = (id: string) => setWatched({ runId: id, attempt: 0 });
  const [run, setRun] = useState<ReconciliationRunDetail | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [starting, setStarting] = useState(false);
  const [recent, setRecent] = useState<ReconciliationRun[]>([]);

  const readRecent = useCallback(async () => {
    try {
      setRecent((await callApi<{ runs: ReconciliationRun[] }>('GET', '/api/reconciliation')).runs);
    } catch {
      // The list is a convenience; the run itself reports its own errors.
    }
  }, []);

  useEffect(() => {
    void readRecent();
  }, [readRecent]);

  useEffect(() => {
    navigate(addressOf(form, runId), { replace: true });
  }, [form, runId]);

  useEffect(() => {
    if (watched === null) return;
    const { runId } = watched;
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const read = async () => {
      try {
        const answer = await callApi<ReconciliationRunDetail>('GET', `/api/reconciliation/${runId}`);
        if (stopped) return;
        setRun(answer);
        setError(null);
        if (answer.state === 'running') timer = setTimeout(read, POLL_MS);
        else void readRecent();
      } catch (failure) {
        if (!stopped) setError(messageOf(failure));
      }
    };
    void read();
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, [watched, readRecent]);

  const fromMs = startOfDay(form.from);
  const toMs = startOfDay(form.to) + DAY_MS;
  const periodProblem = Number.isNaN(fromMs) || Number.isNaN(toMs) ? 'Pick both days.' : toMs <= fromMs ? 'The last day comes before the first.' : null;

  const handleStart = async (event: FormEvent) => {
    event.preventDefault();
    if (periodProblem) return;
    setStarting(true);
    try {
      const started = await callApi<ReconciliationRunDetail>('POST', '/api/reconciliation', { from_ms: appToWallMs(fromMs, offsetMs), to_ms: appToWallMs(toMs, offsetMs) });
      setRun(started);
      setRunId(started.id);
      setError(null);
    } catch (failure) {
      setError(messageOf(failure));
    } finally {
      setStarting(false);
    }
  };

  return (
    <section className="page reconcile-page">
      <div className="page-head">
        <div>
          <h1 id="page-title" tabIndex={-1}>
            Reconciliation
          </h1>
          <p className="lede">The journal against Stripe&apos;s refunds for a period, on every payment Interlock has seen, matched by the effect id in each refund.</p>
        </div>
      </div>
      <form className="reconcile-form" onSubmit={(event) => void handleStart(event)} noValidate>
        <div className="reconcile-field">
          <label htmlFor="reconcile-from">First day</label>
          <input id="reconcile-from" type="date" value={form.from} onChange={(e) => setForm({ ...form, from: e.target.value })} />
        </div>
        <div className="reconcile-field">
          <label htmlFor="reconcile-to">Last day (included)</label>
          <input id="reconcile-to" type="date" value={form.to} onChange={(e) => setForm({ ...form, to: e.target.value })} aria-describedby="reconcile-period-note" />
        </div>
        <button type="submit" className="button primary" disabled={starting || periodProblem !== null}>
          {starting ? 'Starting…' : 'Compare with Stripe'}
        </button>
        <p id="reconcile-period-note" className="reconcile-note">
          {periodProblem ?? 'Refunds are looked for 24 h past each edge of the period, so one sent just before midnight still matches.'}
        </p>
      </form>
      {error && <ErrorState title="The reconciliation could not be read" message={error} onRetry={watched ? () => setWatched({ ...watched, attempt: watched.attempt + 1 }) : undefined} />}
      {run && <RunView run={run} />}
      <RecentRuns runs={recent} current={runId} onOpen={(id) => setRunId(id)} />
    </section>
  );
}

/** A run: its progress while it runs, its failure, or its result. */
function RunView({ run }: { run: ReconciliationRunDetail }) {
  const { progress } = run;
  const period = periodWords(run, useClockOffsetMs());
  return (
    <section className="panel reconcile-run" aria-labelledby="reconcile-run-title">
      <div className="panel-head">
        <h2 id="reconcile-run-title">Run for {period}</h2>
        <Badge tone={run.state === 'done' ? 'success' : run.state === 'failed' ? 'danger' : 'info'}>{run.state === 'running' ? 'Running' : run.state === 'done' ? 'Done' : 'Failed'}</Badge>
      </div>
      <div role="status" aria-live="polite" className="reconcile-progress">
        <label htmlFor="reconcile-progress-bar">
          {PHASE_WORDS[progress.phase]}{' '}
          {progress.payment_intents_total === null ? '' : `${progress.payment_intents_done} of ${progress.payment_intents_total} payments listed, ${progress.refunds_listed} refunds read.`}
        </label>
        <progress id="reconcile-progress-bar" max={progress.payment_intents_total ?? 1} value={progress.payment_intents_total === null ? 0 : progress.payment_intents_done} />
      </div>
      {run.state === 'failed' && <p className="notice notice-warning">{run.error}</p>}
      {run.result && <RunResult result={run.result} />}
    </section>
  );
}

type RunResultShown = NonNullable<ReconciliationRunDetail['result']>;
type CategoryResult = RunResultShown[ReconciliationCategory];

/**
 * A finished run: its counts, then the exceptions (every category but matched that holds a
 * refund) first, so one is in view without scrolling; the matched refunds after them, their rows
 * folded away while there is an exception to read; the empty categories named in one line.
 */
function RunResult({ result }: { result: RunResultShown }) {
  const matched = useRef<HTMLDetailsElement>(null);
  const exceptions = RECONCILIATION_CATEGORIES.filter((category) => category !== 'matched' && result[category].count > 0);
  const empty = RECONCILIATION_CATEGORIES.filter((category) => category !== 'matched' && result[category].count === 0);
  // The count's link opens the folded rows it points to.
  const handleOpen = (category: ReconciliationCategory) => {
    if (category === 'matched' && matched.current) matched.current.open = true;
  };
  return (
    <>
      <ul className="reconcile-counts" aria-label="Refunds by category">
        {RECONCILIATION_CATEGORIES.map((category) => (
          <li key={category}>
            <a href={`#reconcile-${category}`} data-category={category} data-count={result[category].count} onClick={() => handleOpen(category)}>
              <Badge tone={result[category].count === 0 ? 'neutral' : CATEGORY_COPY[category].tone}>{result[category].count}</Badge> {CATEGORY_COPY[category].title}
            </a>
          </li>
        ))}
      </ul>
      {exceptions.length === 0 ? (
        <p className="notice notice-success reconcile-verdict">No exception: every refund of the period is in the journal and in Stripe, with the same amount.</p>
      ) : (
        <p className="reconcile-verdict">
          <strong>
            {exceptions.reduce((n, category) => n + result[category].count, 0)} to look at
          </strong>
          , listed first; the matched refunds follow.
        </p>
      )}
      {exceptions.map((category) => (
        <CategoryTable key={category} category={category} result={result[category]} />
      ))}
      <CategoryTable category="matched" result={result.matched} folded={exceptions.length > 0} foldRef={matched} />
      {empty.length > 0 && (
        <p className="reconcile-none">
          None in this period:{' '}
          {empty.map((category, i) => (
            <span key={category} id={`reconcile-${category}`} data-category={category}>
              {i > 0 && ' · '}
              {CATEGORY_COPY[category].title}
            </span>
          ))}
          .
        </p>
      )}
    </>
  );
}

/** One category: what it means, its sums per currency, and its refunds (with `foldRef`, in a fold, closed while `folded`). */
function CategoryTable({ category, result, folded = false, foldRef }: { category: ReconciliationCategory; result: CategoryResult; folded?: boolean; foldRef?: Ref<HTMLDetailsElement> }) {
  const copy = CATEGORY_COPY[category];
  const sums = Object.entries(result.amounts).map(([currency, cents]) => formatMoney(cents, currency === UNKNOWN_CURRENCY ? null : currency));
  const id = `reconcile-${category}`;
  const table =
    result.rows.length === 0 ? (
      <p className="muted">None in this period.</p>
    ) : (
      <CategoryRows category={category} result={result} labelledBy={id} />
    );
  return (
    <section className="reconcile-category" aria-labelledby={id} data-category={category}>
      <h3 id={id} tabIndex={-1}>
        {copy.title} <span className="muted">({result.count}{sums.length ? `: ${sums.join(', ')}` : ''})</span>
      </h3>
      <p className="reconcile-means">{copy.means}</p>
      {/* Folded only where there are exceptions to read first; open when they are all there is. */}
      {result.rows.length > 0 && foldRef !== undefined ? (
        <details className="reconcile-fold" open={!folded} ref={foldRef}>
          <summary>
            The {result.count} {copy.title.toLowerCase()} {result.count === 1 ? 'refund' : 'refunds'}
          </summary>
          {table}
        </details>
      ) : (
        table
      )}
    </section>
  );
}

/** A category's refunds, and a note when there are more than the run keeps. */
function CategoryRows({ category, result, labelledBy }: { category: ReconciliationCategory; result: CategoryResult; labelledBy: string }) {
  return (
    <>
      <table className="history-table reconcile-table" aria-labelledby={labelledBy}>
        <thead>
          <tr>
            <th scope="col">{category === 'by_hand' ? 'Stripe refund' : 'Request'}</th>
            <th scope="col">Payment</th>
            <th scope="col">In the journal</th>
            <th scope="col">In Stripe</th>
            <th scope="col">Links</th>
          </tr>
        </thead>
        <tbody>
          {result.rows.map((row) => (
            <RowView key={`${row.effect_id ?? ''}:${row.stripe_refund ?? ''}`} row={row} byHand={category === 'by_hand'} />
          ))}
        </tbody>
      </table>
      {result.count > result.rows.length && (
        <p className="muted">
          Showing the first {result.rows.length} of {result.count}; a shorter period shows the rest.
        </p>
      )}
    </>
  );
}

function RowView({ row, byHand }: { row: ReconciliationRow; byHand: boolean }) {
  const offsetMs = useClockOffsetMs();
  const side = (amount: number | null, refund: string | null, atMs: number | null, status?: string | null): ReactNode =>
    amount === null ? (
      <span className="muted">Nothing</span>
    ) : (
      <>
        <span className="history-amount">{formatMoney(amount, row.currency)}</span>
        <br />
        <span className="mono small-text">{refund ?? 'no refund id'}</span>
        {status && <span className="small-text"> · {status}</span>}
        {atMs !== null && (
          <>
            <br />
            <time className="small-text" dateTime={new Date(wallToAppMs(atMs, offsetMs)).toISOString()}>
              {formatFull(wallToAppMs(atMs, offsetMs))}
            </time>
          </>
        )}
      </>
    );
  const item = row.effect_id ?? row.payment_items[0] ?? null;
  return (
    <tr data-refund={row.stripe_refund ?? ''} data-effect={row.effect_id ?? ''}>
      <td data-label={byHand ? 'Refund' : 'Request'}>
        {byHand ? <span className="mono">{row.stripe_refund}</span> : <span className="mono">{row.request_id ?? row.effect_id}</span>}
        {row.agent && <span className="small-text muted"> by {row.agent}</span>}
      </td>
      <td data-label="Payment">
        <span className="mono small-text">{row.payment_intent}</span>
      </td>
      <td data-label="Journal">{side(row.journal_amount, row.journal_refund, row.journal_at_ms)}</td>
      <td data-label="Stripe">{side(row.stripe_amount, row.stripe_refund, row.stripe_created_ms, row.stripe_status)}</td>
      <td data-label="Links">
        {item === null ? (
          <span className="muted">None</span>
        ) : (
          <>
            <Link href={itemPath(item)}>{row.effect_id ? 'Item' : 'An item on this payment'}</Link>
            {row.effect_id && (
              <>
                {' · '}
                <a href={`/api/items/${row.effect_id}/receipt`} download={`receipt-${row.effect_id}.json`}>
                  Receipt
                </a>
              </>
            )}
          </>
        )}
      </td>
    </tr>
  );
}

/** The runs the server keeps (until a restart), to open one again. */
function RecentRuns({ runs, current, onOpen }: { runs: ReconciliationRun[]; current: string | null; onOpen: (id: string) => void }) {
  const offsetMs = useClockOffsetMs();
  if (runs.length === 0) return null;
  return (
    <section className="reconcile-recent" aria-labelledby="reconcile-recent-title">
      <h2 id="reconcile-recent-title">Recent runs</h2>
      <ul>
        {runs.map((run) => (
          <li key={run.id}>
            <button type="button" className="button ghost" aria-current={run.id === current ? 'true' : undefined} onClick={() => onOpen(run.id)}>
              {periodWords(run, offsetMs)}
            </button>{' '}
            <span className="small-text muted">
              {run.state}, started by {run.started_by}
              {run.counts
                ? `: ${run.counts.matched ?? 0} matched, ${(run.counts.missing_in_stripe ?? 0) + (run.counts.amount_mismatch ?? 0)} disagreeing, ${run.counts.by_hand ?? 0} by hand, ${run.counts.failed_at_stripe ?? 0} failed at Stripe`
                : ''}
            </span>
          </li>
        ))}
      </ul>
    </section>
  );
}
