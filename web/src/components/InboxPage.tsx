import { type ReactNode, useEffect, useRef, useState } from 'react';
import type { SessionInfo, Viewer } from '../../../shared/api.ts';
import { itemCurrency } from '../currency.ts';
import { type Density, useDensity } from '../density.ts';
import { formatMoney } from '../format.ts';
import { useDocumentTitle, useListKeys, useNowMs, useShortcuts } from '../hooks.ts';
import { activeFilterCount, applyFilters, filtersQuery, type InboxFilters, NO_FILTERS, parseFilters, SORT_LABELS } from '../inbox-filters.ts';
import { useLiveFeed, useLiveState } from '../live.ts';
import { inboxPath, navigate, openItemToDecide, useSearch } from '../router.ts';
import { CompactInboxRow, InboxRow } from './InboxRow.tsx';
import { InboxFilterBar, SortField } from './InboxFilterBar.tsx';
import { NotifyButton } from './NotifyButton.tsx';
import { EmptyState, ErrorState, LoadingState } from './StateViews.tsx';

/** How long a newly arrived row stays highlighted. */
const FRESH_MS = 6_000;

const NO_VIEWERS: readonly Viewer[] = [];

/**
 * The rows in the order they are shown. New items are added at the end and nothing already
 * shown moves, so a row never shifts under the person's cursor or eyes; the queue order comes
 * back when they ask for it, when the filters change, or when nothing was shown before. An item
 * whose place in the order changed (a refusal gave it a later deadline) stays put until asked too.
 */
function useSteadyOrder(sortedIds: readonly string[], resetKey: string) {
  const [settled, setSettled] = useState<{ key: string; ids: readonly string[] } | null>(null);
  const base = settled !== null && settled.key === resetKey ? settled.ids : sortedIds;
  const present = new Set(sortedIds);
  const kept = base.filter((id) => present.has(id));
  const known = new Set(base);
  const arrivals = sortedIds.filter((id) => !known.has(id));
  const shown = [...kept, ...arrivals];
  const inOrder = shown.every((id, i) => id === sortedIds[i]);
  const settle = () => setSettled({ key: resetKey, ids: [...sortedIds] });
  // Settling moves nothing on screen when the rows already are in order (arrivals that sort last),
  // or when nothing was shown: then new rows count as seen.
  const mustSettle = settled === null || settled.key !== resetKey || (arrivals.length > 0 && (kept.length === 0 || inOrder));
  useEffect(() => {
    if (mustSettle) setSettled({ key: resetKey, ids: [...sortedIds] });
  });
  return { shown, arrivals: arrivals.length, inOrder, settle };
}

/** My open items, most urgent first, kept live over the websocket. */
export function InboxPage({ session }: { session: SessionInfo }) {
  const feed = useLiveFeed();
  const live = useLiveState();
  const search = useSearch();
  const filters = parseFilters(search);
  const [density, setDensity] = useDensity(session.name);
  const listRef = useListKeys<HTMLOListElement>('.row-link');
  const [fresh, setFresh] = useState<ReadonlySet<string>>(new Set());
  const [announcement, setAnnouncement] = useState('');
  const known = useRef(new Map<string, string>());
  const count = live.items?.length ?? 0;
  useDocumentTitle(count > 0 ? `(${count}) Inbox` : 'Inbox');

  // Mark new and changed rows for a moment; say when one leaves (arrivals get a toast from the shell).
  useEffect(() => {
    return feed.onItem((effectId, item, movedUp) => {
      if (item) {
        if (known.current.has(effectId)) setAnnouncement(`Item updated: ${formatMoney(item.request.amount, itemCurrency(item))} refund, request ${item.request.id}.`);
        setFresh((prev) => new Set(prev).add(effectId));
        setTimeout(() => setFresh((prev) => new Set([...prev].filter((id) => id !== effectId))), FRESH_MS);
      } else {
        const requestId = known.current.get(effectId);
        if (movedUp) setAnnouncement(`Request ${movedUp.request_id} moved up to ${movedUp.to_group}: ${movedUp.from_group} missed its deadline.`);
        else if (requestId) setAnnouncement(`Request ${requestId} left your inbox.`);
      }
    });
  }, [feed]);
  useEffect(() => {
    known.current = new Map((live.items ?? []).map((i) => [i.effect_id, i.request.id]));
  }, [live.items]);

  const query = filtersQuery(filters);
  const clock = { appNowMs: useNowMs() + live.offsetMs, offsetMs: live.offsetMs, reader: session.name };
  const matching = applyFilters(live.items ?? [], filters, clock);
  const order = useSteadyOrder(
    matching.map((i) => i.effect_id),
    query,
  );
  const byId = new Map(matching.map((i) => [i.effect_id, i]));
  const rows = order.shown.flatMap((id) => byId.get(id) ?? []);

  // a or r on a focused row opens that item with its confirmation step: the facts stay in view. Finance decides nothing.
  const readOnly = session.role !== 'approver';
  const decideFocused = (action: 'approve' | 'reject') => () => {
    if (readOnly) return;
    const row = document.activeElement?.closest<HTMLElement>('li.inbox-row');
    if (row?.dataset.effectId) openItemToDecide(row.dataset.effectId, action, query);
  };
  useShortcuts({ a: decideFocused('approve'), r: decideFocused('reject') });

  const handleFilters = (next: InboxFilters) => navigate(inboxPath(filtersQuery(next)), { replace: true });
  const viewersOf = (effectId: string) => {
    const viewers = live.viewers.get(effectId);
    return viewers ? viewers.filter((v) => v.name !== session.name) : NO_VIEWERS;
  };

  const groups = readOnly ? 'every group' : session.groups.join(', ');
  let body: ReactNode;
  if (live.items === null && live.error) {
    body = <ErrorState title="Your inbox could not be read" message={live.error} onRetry={feed.retryNow} />;
  } else if (live.items === null) {
    body = <LoadingState label="Loading your inbox…" />;
  } else if (live.items.length === 0) {
    body = (
      <EmptyState title="Nothing waits for you">
        <p>
          Refunds that need a person from {groups || 'your groups'} appear here by themselves, most urgent first. No need to reload.
        </p>
      </EmptyState>
    );
  } else if (rows.length === 0) {
    body = (
      <EmptyState title="No item matches these filters" icon="∅">
        <p>{live.items.length} open items are hidden by the filters.</p>
        <button type="button" className="button" onClick={() => handleFilters({ ...NO_FILTERS, sort: filters.sort })}>
          Clear filters
        </button>
      </EmptyState>
    );
  } else {
    const Row = density === 'compact' ? CompactInboxRow : InboxRow;
    body = (
      <ol className={`inbox-list${density === 'compact' ? ' compact' : ''}`} ref={listRef} aria-label="Open items, most urgent first">
        {rows.map((item) => (
          <Row key={item.effect_id} item={item} offsetMs={live.offsetMs} fresh={fresh.has(item.effect_id)} search={query} viewers={viewersOf(item.effect_id)} reader={readOnly} user={session.name} />
        ))}
      </ol>
    );
  }

  return (
    <section className={`page inbox-page density-${density}`}>
      <div className="page-head">
        <div>
          <h1 id="page-title" tabIndex={-1}>
            Inbox
          </h1>
          <p className="lede">
            Refunds waiting for <strong>{groups || 'your groups'}</strong>:{' '}
            {filters.sort === 'urgent' ? 'breached first, then the longest overdue, then the soonest due.' : `${SORT_LABELS[filters.sort].toLowerCase()}.`}
            {readOnly && ' Read only: finance sees every item and decides none.'}
          </p>
        </div>
        <div className="inbox-tools">
          <div className="tool-row">
            {live.items && live.items.length > 0 && <SortField sort={filters.sort} onChange={(sort) => handleFilters({ ...filters, sort })} />}
            <LiveIndicator status={live.status} count={live.items?.length ?? null} />
          </div>
          <div className="tool-row">
            <DensityToggle density={density} onChange={setDensity} />
            {!readOnly && <NotifyButton user={session.name} />}
          </div>
        </div>
      </div>
      {live.items && live.items.length > 0 && (
        <InboxFilterBar items={live.items} filters={filters} shown={matching.length} clock={clock} approver={!readOnly} onChange={handleFilters} />
      )}
      <p className="sr-only" aria-live="polite">
        {announcement}
      </p>
      {!order.inOrder && (
        <div className="queue-bar" role="status">
          <p>{order.arrivals > 0 ? `${order.arrivals} new, added at the end so nothing moved under you.` : 'Some items changed place in the order since you opened this list.'}</p>
          <button type="button" className="button small primary queue-bar-button" onClick={order.settle}>
            {order.arrivals > 0 ? `${order.arrivals} new · put in order` : 'Put in order'}
          </button>
        </div>
      )}
      {body}
      {rows.length > 0 && (
        <p className="hint">
          <kbd>j</kbd> <kbd>k</kbd> to move, <kbd>Enter</kbd> to open
          {!readOnly && (
            <>
              , <kbd>a</kbd> or <kbd>r</kbd> to decide the focused item
            </>
          )}
          , <kbd>?</kbd> for all shortcuts.
          {!readOnly && activeFilterCount(filters) > 0 && ' After a decision, the next item in this filtered list opens.'}
        </p>
      )}
    </section>
  );
}

/** Cards or one line per item; remembered for this person in this browser. */
function DensityToggle({ density, onChange }: { density: Density; onChange: (density: Density) => void }) {
  return (
    <fieldset className="density-toggle">
      <legend className="sr-only">Density</legend>
      <button type="button" className="button small" aria-pressed={density === 'cards'} onClick={() => onChange('cards')}>
        Cards
      </button>
      <button type="button" className="button small" aria-pressed={density === 'compact'} onClick={() => onChange('compact')}>
        Compact
      </button>
    </fieldset>
  );
}

function LiveIndicator({ status, count }: { status: string; count: number | null }) {
  const live = status === 'live';
  return (
    <p className={`live-indicator ${live ? 'is-live' : 'is-off'}`}>
      <span className="live-dot" aria-hidden="true" />
      {live ? 'Live' : status === 'connecting' ? 'Connecting…' : 'Reconnecting…'}
      {count !== null && <span className="live-count"> · {count} open</span>}
    </p>
  );
}
