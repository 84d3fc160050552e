import { type ReactNode, type Ref, useEffect, useRef, useState } from 'react';
import type { HistoryItem } from '../../../shared/api.ts';
import { callApi, messageOf } from '../api-client.ts';
import { useDirectory } from '../directory.ts';
import { beneficiaryName, formatFull, formatMoney, formatWhen, isoOf, namesInWords } from '../format.ts';
import { useDocumentTitle, useListKeys, useShortcuts } from '../hooks.ts';
import { confirmationLabel, OUTCOME_LABELS, OUTCOME_TONES } from '../labels.ts';
import { itemPath, navigate } from '../router.ts';
import { Link } from './Link.tsx';
import { Badge, EmptyState, ErrorState, LoadingState } from './StateViews.tsx';

/** Wait this long after the last keystroke before searching. */
const SEARCH_DEBOUNCE_MS = 250;

const COPY = {
  done: { title: 'Done', lede: 'Refunds that were sent, newest first.', empty: 'Nothing sent yet' },
  closed: {
    title: 'Closed',
    lede: 'Requests never sent: rejected (with the reason given), repaired into a new request, or closed after an ambiguous send.',
    empty: 'Nothing closed yet',
  },
} as const;

type Load = { phase: 'loading' } | { phase: 'error'; message: string } | { phase: 'ready'; items: HistoryItem[] };

/** The done or closed list of my groups, searchable by request id or payment intent. */
export function HistoryPage({ kind, q }: { kind: 'done' | 'closed'; q: string }) {
  const copy = COPY[kind];
  const [query, setQuery] = useState(q);
  const [load, setLoad] = useState<Load>({ phase: 'loading' });
  const [attempt, setAttempt] = useState(0);
  const searchRef = useRef<HTMLInputElement>(null);
  const listRef = useListKeys<HTMLTableSectionElement>('.history-link');
  useDocumentTitle(copy.title);
  useShortcuts({ '/': () => searchRef.current?.focus() });

  // The first read and a retry go at once; typing waits for a pause.
  const immediate = useRef(true);
  useEffect(() => {
    let stale = false;
    const delayMs = attempt >= 0 && immediate.current ? 0 : SEARCH_DEBOUNCE_MS;
    immediate.current = false;
    const timer = setTimeout(
      async () => {
        navigate(query ? `/${kind}?q=${encodeURIComponent(query)}` : `/${kind}`, { replace: true });
        try {
          const answer = await callApi<{ items: HistoryItem[] }>('GET', `/api/${kind}?q=${encodeURIComponent(query.trim())}`);
          if (!stale) setLoad({ phase: 'ready', items: answer.items });
        } catch (error) {
          if (!stale) setLoad({ phase: 'error', message: messageOf(error) });
        }
      },
      delayMs,
    );
    return () => {
      stale = true;
      clearTimeout(timer);
    };
  }, [kind, query, attempt]);

  let body: ReactNode;
  if (load.phase === 'loading') body = <LoadingState label={`Loading ${copy.title.toLowerCase()} items…`} />;
  else if (load.phase === 'error') body = <ErrorState title="The list could not be loaded" message={load.message} onRetry={() => {
          immediate.current = true;
          setAttempt((n) => n + 1);
        }} />;
  else if (load.items.length === 0) {
    body = query.trim() ? (
      <EmptyState title="No match" icon="∅">
        <p>
          Nothing in {copy.title.toLowerCase()} matches “{query.trim()}”. Search by a full or partial request id or payment intent.
        </p>
      </EmptyState>
    ) : (
      <EmptyState title={copy.empty} icon="∅">
        <p>Items of your groups appear here once they are {kind === 'done' ? 'sent' : 'closed'}.</p>
      </EmptyState>
    );
  } else body = <HistoryTable items={load.items} listRef={listRef} />;

  return (
    <section className="page">
      <div className="page-head">
        <div>
          <h1 id="page-title" tabIndex={-1}>
            {copy.title}
          </h1>
          <p className="lede">{copy.lede}</p>
        </div>
      </div>
      <search className="search">
        <label htmlFor="history-search">Search by request id or payment intent</label>
        <div className="search-row">
          <input
            id="history-search"
            ref={searchRef}
            type="search"
            value={query}
            placeholder="e.g. req-1042 or pi_3N…"
            autoComplete="off"
            spellCheck={false}
            onChange={(e) => setQuery(e.target.value)}
          />
          <span className="key-hint search-key" aria-hidden="true">
            /
          </span>
        </div>
      </search>
      {load.phase === 'ready' && load.items.length > 0 && (
        <p className="result-count" aria-live="polite">
          {load.items.length} {load.items.length === 1 ? 'item' : 'items'}
          {query.trim() ? ` matching “${query.trim()}”` : ''}
        </p>
      )}
      {body}
    </section>
  );
}

function HistoryTable({ items, listRef }: { items: HistoryItem[]; listRef: Ref<HTMLTableSectionElement> }) {
  const { displayName } = useDirectory();
  return (
    <table className="history-table">
      <thead>
        <tr>
          <th scope="col">Amount</th>
          <th scope="col">Request</th>
          <th scope="col">Outcome</th>
          <th scope="col">Decided by</th>
          <th scope="col">When</th>
        </tr>
      </thead>
      <tbody ref={listRef}>
        {items.map((item) => {
          const stripe = confirmationLabel(item.confirmed);
          return (
            <tr key={item.effect_id} data-effect-id={item.effect_id} data-request-id={item.request.id}>
              <td className="history-amount" data-label="Amount">
                <Link href={itemPath(item.effect_id)} className="history-link">
                  {formatMoney(item.request.amount, item.currency)}
                  <span className="sr-only">, request {item.request.id}</span>
                </Link>
              </td>
              <td data-label="Request">
                <span className="mono">{item.request.id}</span>
                <span className="mono subtle">{item.request.payment_intent}</span>
                {item.request.on_behalf_of && <span className="made-for">Made for {beneficiaryName(item.request.on_behalf_of, displayName)}</span>}
              </td>
              <td data-label="Outcome">
                <Badge tone={OUTCOME_TONES[item.outcome]}>{OUTCOME_LABELS[item.outcome]}</Badge>
                {item.reject_reason && <span className="history-reason">Why: {item.reject_reason}</span>}
                {item.state === 'DONE' && <span className={`subtle confirm-${stripe.tone}`}>{stripe.text}</span>}
                {item.refund && <span className="mono subtle">{item.refund}</span>}
              </td>
              <td data-label="Decided by">
                {decidedBy(item, displayName)}
                {item.group && <span className="subtle">{item.group}</span>}
              </td>
              <td data-label="When">
                <time dateTime={isoOf(item.updated_at_ms)} title={formatFull(item.updated_at_ms)}>
                  {formatWhen(item.updated_at_ms)}
                </time>
              </td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}

/** Who decided, as the ledger and the receipt name them: both approvers of a four-eyes refund, the earlier first. */
function decidedBy(item: HistoryItem, displayName: (login: string) => string): string {
  if (item.approved_by.length > 1) return namesInWords(item.approved_by.map((login) => `${displayName(login)} (${login})`));
  return item.decided_by ? displayName(item.decided_by) : '—';
}
