import { type ReactNode, useEffect, useRef, useState } from 'react';
import type { SessionInfo } from '../../../shared/api.ts';
import { itemCurrency } from '../currency.ts';
import { formatMoney } from '../format.ts';
import { useDocumentTitle, useListKeys, useShortcuts } from '../hooks.ts';
import { openItemToDecide } from '../router.ts';
import { useLiveFeed, useLiveState } from '../live.ts';
import { InboxRow } from './InboxRow.tsx';
import { NotifyButton } from './NotifyButton.tsx';
import { EmptyState, ErrorState, LoadingState } from './StateViews.tsx';

/** How long a newly arrived row stays highlighted. */
const FRESH_MS = 6_000;

/** My open items, soonest due first, kept live over the websocket. */
export function InboxPage({ session }: { session: SessionInfo }) {
  const feed = useLiveFeed();
  const live = useLiveState();
  const listRef = useListKeys<HTMLOListElement>('.row-link');
  const [fresh, setFresh] = useState<ReadonlySet<string>>(new Set());
  const [announcement, setAnnouncement] = useState('');
  const known = useRef(new Map<string, string>());
  const count = live.items?.length ?? 0;
  useDocumentTitle(count > 0 ? `(${count}) Inbox` : 'Inbox');

  // Announce arrivals and departures, and mark new rows for a moment.
  useEffect(() => {
    return feed.onItem((effectId, item) => {
      if (item) {
        const isNew = !known.current.has(effectId);
        setAnnouncement(`${isNew ? 'New item' : 'Item updated'}: ${formatMoney(item.request.amount, itemCurrency(item))} refund, request ${item.request.id}.`);
        setFresh((prev) => new Set(prev).add(effectId));
        setTimeout(() => setFresh((prev) => new Set([...prev].filter((id) => id !== effectId))), FRESH_MS);
      } else {
        const requestId = known.current.get(effectId);
        if (requestId) setAnnouncement(`Request ${requestId} left your inbox.`);
      }
    });
  }, [feed]);
  useEffect(() => {
    known.current = new Map((live.items ?? []).map((i) => [i.effect_id, i.request.id]));
  }, [live.items]);

  // a or r on a focused row opens that item with its confirmation step: the facts stay in view.
  const decideFocused = (action: 'approve' | 'reject') => () => {
    const row = document.activeElement?.closest<HTMLElement>('li.inbox-row');
    if (row?.dataset.effectId) openItemToDecide(row.dataset.effectId, action);
  };
  useShortcuts({ a: decideFocused('approve'), r: decideFocused('reject') });

  const groups = session.groups.join(', ');
  let body: ReactNode;
  if (live.items === null && live.error) {
    body = <ErrorState title="Your inbox could not be read" message={live.error} onRetry={feed.retryNow} />;
  } else if (live.items === null) {
    body = <LoadingState label="Loading your inbox…" />;
  } else if (live.items.length === 0) {
    body = (
      <EmptyState title="Nothing waits for you">
        <p>
          Refunds that need a person from {groups || 'your groups'} appear here by themselves, soonest due first. No need to reload.
        </p>
      </EmptyState>
    );
  } else {
    body = (
      <ol className="inbox-list" ref={listRef} aria-label="Open items, soonest due first">
        {live.items.map((item) => (
          <InboxRow key={item.effect_id} item={item} offsetMs={live.offsetMs} fresh={fresh.has(item.effect_id)} />
        ))}
      </ol>
    );
  }

  return (
    <section className="page">
      <div className="page-head">
        <div>
          <h1 id="page-title" tabIndex={-1}>
            Inbox
          </h1>
          <p className="lede">
            Refunds waiting for <strong>{groups || 'your groups'}</strong>, soonest due first.
          </p>
        </div>
        <div className="inbox-tools">
          <LiveIndicator status={live.status} count={live.items?.length ?? null} />
          <NotifyButton user={session.name} />
        </div>
      </div>
      <p className="sr-only" aria-live="polite">
        {announcement}
      </p>
      {body}
      {live.items && live.items.length > 0 && (
        <p className="hint">
          <kbd>j</kbd> <kbd>k</kbd> to move, <kbd>Enter</kbd> to open, <kbd>a</kbd> or <kbd>r</kbd> to decide the focused item, <kbd>?</kbd>{' '}
          for all shortcuts.
        </p>
      )}
    </section>
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
