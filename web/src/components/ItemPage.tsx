import { type ReactNode, useCallback, useEffect, useRef, useState } from 'react';
import type { ItemDetail, SessionInfo } from '../../../shared/api.ts';
import type { WhyCode } from '../../../shared/statuses.ts';
import { ApiError, callApi, messageOf } from '../api-client.ts';
import { detailCurrency, rememberDetail } from '../currency.ts';
import { formatMoney } from '../format.ts';
import { useDocumentTitle, useShortcuts } from '../hooks.ts';
import { levelLabel } from '../labels.ts';
import { useLiveFeed, useLiveState } from '../live.ts';
import { navigate, takeIntent } from '../router.ts';
import { ConfirmDialog, type PendingDecision } from './ConfirmDialog.tsx';
import { DecisionPanel } from './DecisionPanel.tsx';
import { FactTable } from './FactTable.tsx';
import { ItemSummary } from './ItemSummary.tsx';
import { Link } from './Link.tsx';
import { OutcomeBanner } from './OutcomeBanner.tsx';
import { ReasonSummary } from './ReasonSummary.tsx';
import { ReceiptPanel } from './ReceiptPanel.tsx';
import { SlaCountdown } from './SlaCountdown.tsx';
import { Badge, ErrorState, LoadingState } from './StateViews.tsx';
import { Timeline } from './Timeline.tsx';
import { useDecision } from '../use-decision.ts';
import { WhoWasToldPanel } from './WhoWasToldPanel.tsx';

type Load = { phase: 'loading' } | { phase: 'missing' } | { phase: 'error'; message: string } | { phase: 'ready'; detail: ItemDetail };

const AMBIGUOUS: WhyCode = 'ambiguous';

/** The escalation I could decide on this page: the item's, when it sits in one of my groups. */
function myEscalation(detail: ItemDetail, groups: readonly string[]): string | null {
  return detail.item && groups.includes(detail.item.group) ? detail.item.escalation : null;
}

/** One item: the request, the facts then and now, the decision, the journal and the receipt. */
export function ItemPage({ effectId, session }: { effectId: string; session: SessionInfo }) {
  const feed = useLiveFeed();
  const { offsetMs } = useLiveState();
  const [load, setLoad] = useState<Load>({ phase: 'loading' });
  /** The latest live news of this item: its escalation if in my groups, null if it left them; undefined: none. */
  const [liveEscalation, setLiveEscalation] = useState<string | null | undefined>(undefined);
  const detail = load.phase === 'ready' ? load.detail : null;
  const currency = detail ? detailCurrency(detail) : null;
  const show = useCallback((next: ItemDetail) => {
    rememberDetail(next);
    setLoad({ phase: 'ready', detail: next });
  }, []);
  const decision = useDecision(effectId, detail, show);
  useDocumentTitle(detail ? `${formatMoney(detail.request.amount, currency)} · ${detail.request.id}` : 'Item');

  const refresh = useCallback(async () => {
    try {
      show(await callApi<ItemDetail>('GET', `/api/items/${effectId}`));
      setLiveEscalation(undefined);
    } catch (error) {
      setLoad(error instanceof ApiError && error.code === 'not_found' ? { phase: 'missing' } : { phase: 'error', message: messageOf(error) });
    }
  }, [effectId, show]);

  useEffect(() => {
    void refresh();
  }, [refresh]);

  useEffect(
    () =>
      feed.onItem((id, item) => {
        if (id === effectId) setLiveEscalation(item && session.groups.includes(item.group) ? item.escalation : null);
      }),
    [feed, effectId, session.groups],
  );

  // Shortcuts open the same confirmation as the buttons; the action must fit the item.
  const choose = (action: PendingDecision['action'], repairIndex?: number) => () => {
    const item = detail?.item;
    if (!detail || !item || !detail.may_decide || decision.pending) return;
    if ((action === 'close') !== (item.reason === AMBIGUOUS)) return;
    const repair = repairIndex === undefined ? undefined : item.repairs[repairIndex];
    if (repairIndex !== undefined && !repair) return;
    decision.choose({
      action,
      amountCents: detail.request.amount,
      currency,
      paymentIntent: detail.request.payment_intent,
      requestId: detail.request.id,
      ...(repair && repairIndex !== undefined ? { repair, repairIndex } : {}),
    });
  };
  useShortcuts({ a: choose('approve'), r: choose('reject'), p: choose('repair', 0), x: choose('close'), u: () => navigate('/') });

  // Arriving from the inbox with a or r: open that confirmation as soon as the item is shown.
  const arrived = useRef(false);
  useEffect(() => {
    if (!detail || arrived.current) return;
    arrived.current = true;
    const action = takeIntent(effectId);
    if (action) choose(action)();
  });

  if (load.phase === 'loading') {
    return (
      <ItemFrame>
        <LoadingState label="Loading the item and reading Stripe…" />
      </ItemFrame>
    );
  }
  if (load.phase === 'missing') {
    return (
      <ItemFrame title="Not in your groups">
        <ErrorState title="This item is not in your groups" message="It does not exist, or it was never routed to a group you belong to. Nothing about it is shown." />
      </ItemFrame>
    );
  }
  if (load.phase === 'error') {
    return (
      <ItemFrame>
        <ErrorState title="The item could not be loaded" message={load.message} onRetry={() => void refresh()} />
      </ItemFrame>
    );
  }

  const d = load.detail;
  const changedUnderMe = !decision.busy && liveEscalation !== undefined && liveEscalation !== myEscalation(d, session.groups);
  return (
    <section className="page item-page">
      <p className="breadcrumb">
        <Link href="/" className="breadcrumb-link">
          ← Inbox
        </Link>
      </p>
      {decision.outcome && (
        <OutcomeBanner
          ref={decision.outcomeRef}
          status={decision.outcome.status}
          message={decision.outcome.message}
          detail={d}
          myGroups={session.groups}
          repair={decision.outcome.repair}
          currency={currency}
        />
      )}
      {changedUnderMe && (
        <LiveChangeNotice
          left={liveEscalation === null}
          onRefresh={() => {
            decision.forget();
            void refresh();
          }}
        />
      )}
      <div className="item-grid">
        <div className="item-main">
          <ItemSummary detail={d} currency={currency} />
          {d.item && <WhyPanel detail={d} currency={currency} offsetMs={offsetMs} />}
          <section className="panel" aria-labelledby="facts-title">
            <h2 id="facts-title">Facts</h2>
            <FactTable then={d.facts_then} now={d.facts_now} nowError={d.facts_now_error} changes={d.changes} currency={currency} />
          </section>
          <section className="panel" aria-labelledby="history-title">
            <h2 id="history-title">History</h2>
            <Timeline history={d.history} currency={currency} />
          </section>
          <WhoWasToldPanel notifications={d.notifications} session={session} offsetMs={offsetMs} />
        </div>
        <aside className="item-side" aria-label="Decision and receipt">
          <DecisionPanel detail={d} session={session} currency={currency} onChoose={decision.choose} />
          <ReceiptPanel detail={d} />
        </aside>
      </div>
      <ConfirmDialog pending={decision.pending} busy={decision.busy} error={decision.error} onConfirm={decision.confirm} onCancel={decision.cancel} />
    </section>
  );
}

/** Why a person must decide, the failed rules or changes, where it sits and how long is left. */
function WhyPanel({ detail, currency, offsetMs }: { detail: ItemDetail; currency: string | null; offsetMs: number }) {
  const item = detail.item;
  if (!item) return null;
  return (
    <section className="panel why-panel" aria-labelledby="why-title">
      <div className="panel-head">
        <h2 id="why-title">Why it needs a person</h2>
        <p className="row-group">
          <span className="group-name">{item.group}</span> <span className="muted">· {levelLabel(item.level)}</span>
        </p>
      </div>
      <ReasonSummary item={item} currency={currency} />
      <div className="why-sla">
        {item.breach && <Badge tone="danger">SLA breached</Badge>}
        <SlaCountdown dueMs={item.due_ms} breach={item.breach} offsetMs={offsetMs} />
      </div>
    </section>
  );
}

/** The live feed says this item changed while the page was open. */
function LiveChangeNotice({ left, onRefresh }: { left: boolean; onRefresh: () => void }) {
  return (
    <div className="notice notice-warning live-change" role="alert">
      <p>
        <strong>{left ? 'This item left your inbox while you were looking.' : 'This item changed while you were looking.'}</strong>{' '}
        {left
          ? 'Someone decided it, or it moved up to another group. A decision from this page is checked and refused if it is stale.'
          : 'It was escalated again or its facts changed. Look at the current state before deciding.'}
      </p>
      <button type="button" className="button small" onClick={onRefresh}>
        Show the current state
      </button>
    </div>
  );
}

function ItemFrame({ title = 'Item', children }: { title?: string; children: ReactNode }) {
  return (
    <section className="page item-page">
      <p className="breadcrumb">
        <Link href="/" className="breadcrumb-link">
          ← Inbox
        </Link>
      </p>
      <h1 id="page-title" tabIndex={-1} className="sr-only">
        {title}
      </h1>
      {children}
    </section>
  );
}
