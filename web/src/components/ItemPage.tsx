import { useCallback, useEffect, useRef, useState } from 'react';
import type { ChainState, DecisionAnswer, ItemDetail, SessionInfo, Viewer } from '../../../shared/api.ts';
import type { WhyCode } from '../../../shared/statuses.ts';
import { ApiError, callApi, messageOf } from '../api-client.ts';
import { clockGaps } from '../app-time.ts';
import { detailCurrency, rememberDetail } from '../currency.ts';
import { useDirectory } from '../directory.ts';
import { formatMoney } from '../format.ts';
import { useDocumentTitle, useShortcuts } from '../hooks.ts';
import { useLiveFeed, useLiveState } from '../live.ts';
import { holdsDecisions, type LiveNews, newsOf } from '../live-news.ts';
import { finishedToast } from '../next-item.ts';
import { useQueueAround } from '../queue-around.ts';
import { cameByAdvance, forgetAdvance, inboxPath, itemPath, navigate, openNextItem, takeIntent, useSearch } from '../router.ts';
import { showToast } from '../toasts.ts';
import { useDecision } from '../use-decision.ts';
import { ConfirmDialog, type PendingDecision } from './ConfirmDialog.tsx';
import { ApprovalsPanel } from './ApprovalsPanel.tsx';
import { DecisionPanel, decisionBase, originalRefusedWhy, staleReasonOf, stillFitsIndex } from './DecisionPanel.tsx';
import { FactTable, sentByThisRequest } from './FactTable.tsx';
import { ItemFrame, ReadOnlyPanel } from './ItemFrame.tsx';
import { ItemSummary } from './ItemSummary.tsx';
import { LiveChangeNotice } from './LiveChangeNotice.tsx';
import { Link } from './Link.tsx';
import { OutcomeBanner } from './OutcomeBanner.tsx';
import { PaymentPanel } from './PaymentPanel.tsx';
import { PresenceNote } from './PresenceNote.tsx';
import { ReceiptPanel } from './ReceiptPanel.tsx';
import { ErrorState, LoadingState } from './StateViews.tsx';
import { Timeline } from './Timeline.tsx';
import { WhoWasToldPanel } from './WhoWasToldPanel.tsx';
import { WhyPanel } from './WhyPanel.tsx';

type Load = { phase: 'loading' } | { phase: 'missing' } | { phase: 'error'; message: string } | { phase: 'ready'; detail: ItemDetail };

const AMBIGUOUS: WhyCode = 'ambiguous';
/** The key of each decision, to name it in a notice. */
const KEY_OF: Record<PendingDecision['action'], string> = { approve: 'a', reject: 'r', repair: 'p', close: 'x' };
const NO_VIEWERS: readonly Viewer[] = [];
/** States an item passes through on its own after a decision: the page reads it again until it leaves them. */
const SETTLING: ReadonlySet<ChainState> = new Set<ChainState>(['APPROVED', 'SENDING', 'NEW', 'NEEDS_ESCALATION']);
/** Reads of an item the live feed said moved: the first, then a few while it settles, a second apart. */
const LIVE_READS_MAX = 5;
const SETTLE_READ_MS = 1_000;

/** One item: the request, what is wrong, the facts then and now, the payment, the decision, the journal and the receipt. */
export function ItemPage({ effectId, session }: { effectId: string; session: SessionInfo }) {
  const feed = useLiveFeed();
  const { offsetMs, viewers: allViewers } = useLiveState();
  const directory = useDirectory();
  const search = useSearch();
  const [load, setLoad] = useState<Load>({ phase: 'loading' });
  /** Opened as the next item after a decision: its loading state says so. */
  const [advanced] = useState(() => cameByAdvance(effectId));
  useEffect(() => forgetAdvance(effectId), [effectId]);
  /** What the last decision key pressed did not do, and why; null: nothing to say. */
  const [keyNotice, setKeyNotice] = useState<string | null>(null);
  /** A decision key pressed while the item loads: it waits for this item, never applied to another. */
  const heldKey = useRef<PendingDecision['action'] | null>(null);
  /** What changed under the page while it was open, said at once; null: nothing to tell. */
  const [news, setNews] = useState<LiveNews | null>(null);
  const detail = load.phase === 'ready' ? load.detail : null;
  const currency = detail ? detailCurrency(detail) : null;
  const show = useCallback((next: ItemDetail) => {
    rememberDetail(next);
    setLoad({ phase: 'ready', detail: next });
  }, []);
  const queueAround = useQueueAround(effectId, search, session.name);
  // A decision that finished the item opens the next one in the queue, with a toast saying what was done.
  const handleFinished = (answer: DecisionAnswer, decided: PendingDecision): boolean => {
    const { next } = queueAround();
    const toast = finishedToast(answer, decided);
    showToast({
      ...toast,
      status: answer.status,
      text: next ? toast.text : `${toast.text}. Nothing else waits here.`,
      link: { href: itemPath(effectId), label: 'View it' },
    });
    if (next) openNextItem(next, search);
    else navigate(inboxPath(search));
    return true;
  };
  // A decision's answer shows the item as it is after it: older news of the live feed no longer applies.
  const showAnswer = useCallback(
    (next: ItemDetail) => {
      show(next);
      setNews(null);
    },
    [show],
  );
  const decision = useDecision(effectId, detail, showAnswer, handleFinished);
  useDocumentTitle(detail ? `${formatMoney(detail.request.amount, currency)} · ${detail.request.id}` : 'Item');

  // Others see who has this item open; the server forgets this tab when it leaves the item or closes.
  useEffect(() => {
    feed.setViewing(effectId);
    return () => feed.setViewing(null);
  }, [feed, effectId]);

  const refresh = useCallback(async () => {
    try {
      show(await callApi<ItemDetail>('GET', `/api/items/${effectId}`));
      setNews(null);
    } catch (error) {
      setLoad(error instanceof ApiError && error.code === 'not_found' ? { phase: 'missing' } : { phase: 'error', message: messageOf(error) });
    }
  }, [effectId, show]);

  useEffect(() => {
    void refresh();
  }, [refresh]);

  // The live feed says this item moved: hold the decisions at once, read it again, and say what happened.
  const latest = useRef({ detail, busy: decision.busy, drop: decision.drop, forget: decision.forget });
  latest.current = { detail, busy: decision.busy, drop: decision.drop, forget: decision.forget };
  const liveReads = useRef(0);
  useEffect(
    () =>
      feed.onItem((id) => {
        const now = latest.current;
        // A decision of this page is being answered: its answer shows the item as it is then.
        if (id !== effectId || now.busy || now.detail === null) return;
        const before = now.detail;
        const read = ++liveReads.current;
        now.drop();
        setNews({ kind: 'checking' });
        // An item another person approved is being sent: read it again until Stripe has answered, so the page ends on the outcome.
        const readAgain = (settling: number) =>
          callApi<ItemDetail>('GET', `/api/items/${effectId}`, undefined, { background: true }).then(
            (after) => {
              if (read !== liveReads.current) return;
              latest.current.forget();
              show(after);
              if (settling === LIVE_READS_MAX) setNews(newsOf(before, after, session.groups, directory.displayName));
              if (SETTLING.has(after.state) && settling > 1) setTimeout(() => void readAgain(settling - 1), SETTLE_READ_MS);
            },
            (error: unknown) => {
              if (read === liveReads.current && settling === LIVE_READS_MAX) setNews({ kind: 'unread', message: messageOf(error) });
            },
          );
        void readAgain(LIVE_READS_MAX);
      }),
    [feed, effectId, session.groups, show, directory.displayName],
  );

  // Shortcuts open the same confirmation as the buttons; the action must fit the item. A key that
  // cannot open one says why; one pressed while the item loads waits for it.
  const choose = (action: PendingDecision['action'], repairIndex?: number) => () => {
    const key = KEY_OF[action];
    if (!detail) {
      if (load.phase !== 'loading') return;
      heldKey.current = action;
      setKeyNotice(`“${key}” waits for this item: its confirmation opens once the item is shown.`);
      return;
    }
    const item = detail.item;
    if (decision.pending) return;
    const refuse = (why: string) => setKeyNotice(`“${key}” did nothing: ${why}`);
    if (!item || !detail.may_decide) return refuse('there is nothing for you to decide on this item.');
    if (holdsDecisions(news)) return refuse('the item changed while you were looking; nothing can be decided until the page shows what it is now.');
    if ((action === 'close') !== (item.reason === AMBIGUOUS)) {
      return refuse(action === 'close' ? 'only a refund that may already have reached Stripe is closed.' : 'this refund may already have reached Stripe: check it there, then close it with “x”.');
    }
    // Nobody approves a refund for their own benefit, nor twice: the page says why, and so does the key.
    if (detail.approval_block && (action === 'approve' || action === 'repair')) return refuse(`you cannot approve it. ${detail.approval_block.why}`);
    // Where the repair is the same refund on the new facts, approving is accepting it: one decision, one button.
    const fits = stillFitsIndex(item);
    if (action === 'approve' && fits !== null) {
      choose('repair', fits)();
      return;
    }
    const refused = action === 'approve' ? originalRefusedWhy(detail, currency) : null;
    if (refused !== null) return refuse(`approving the original would be refused, so it is not offered: ${refused}.`);
    const repair = repairIndex === undefined ? undefined : item.repairs[repairIndex];
    if (repairIndex !== undefined && !repair) return refuse('no repair is offered for this item.');
    setKeyNotice(null);
    decision.choose({
      action,
      ...decisionBase(detail, currency),
      ...(repair && repairIndex !== undefined ? { repair, repairIndex } : {}),
      ...(action === 'approve' ? { staleBecause: staleReasonOf(detail, currency) } : {}),
    });
  };
  // Enter while the item loads confirms nothing: no confirmation is shown yet, and the page says so.
  const refuseEnter = () => setKeyNotice('Enter did nothing: the item is still loading, and nothing is confirmed before its confirmation is shown.');
  useShortcuts({
    a: choose('approve'),
    r: choose('reject'),
    p: choose('repair', 0),
    x: choose('close'),
    u: () => navigate(inboxPath(search)),
    ...(load.phase === 'loading' ? { Enter: refuseEnter } : {}),
  });

  // Arriving from the inbox with a or r: open that confirmation as soon as the item is shown.
  const arrived = useRef(false);
  useEffect(() => {
    if (!detail || arrived.current) return;
    arrived.current = true;
    // The loading title that had the focus is gone: give it to the item's title, where reading starts.
    if (document.activeElement === null || document.activeElement === document.body) {
      document.getElementById('page-title')?.focus({ preventScroll: true });
    }
    const action = takeIntent(effectId) ?? heldKey.current;
    heldKey.current = null;
    if (action) choose(action)();
  });

  if (load.phase === 'loading') {
    return (
      <ItemFrame search={search}>
        <LoadingState label={advanced ? 'Loading the next item…' : 'Loading the item and reading Stripe…'}>
          <p className="key-notice">{keyNotice ?? 'Keys pressed now wait for this item.'}</p>
        </LoadingState>
      </ItemFrame>
    );
  }
  if (load.phase === 'missing') {
    return (
      <ItemFrame title="Not in your groups" search={search}>
        <ErrorState title="This item is not in your groups" message="It does not exist, or it was never routed to a group you belong to. Nothing about it is shown." />
      </ItemFrame>
    );
  }
  if (load.phase === 'error') {
    return (
      <ItemFrame search={search}>
        <ErrorState title="The item could not be loaded" message={load.message} onRetry={() => void refresh()} />
      </ItemFrame>
    );
  }

  const d = load.detail;
  // Render time on the application clock, for "today" in times; the countdowns tick on their own.
  const appNowMs = Date.now() + offsetMs;
  const viewers = (allViewers.get(effectId) ?? NO_VIEWERS).filter((v) => v.name !== session.name);
  const payment = (d.payment !== undefined || d.payment_error !== undefined) && (
    <PaymentPanel payment={d.payment ?? null} error={d.payment_error ?? null} clock={{ gaps: clockGaps(d.history), offsetMs, appNowMs }} />
  );
  // An open item whose payment Stripe has read again and found as the agent asked it.
  const factsUnchanged = d.item !== null && d.changes.length === 0 && d.facts_now !== null && d.facts_now_error === null;
  const factTable = (
    <FactTable then={d.facts_then} now={d.facts_now} nowError={d.facts_now_error} changes={d.changes} currency={currency} sentMinor={sentByThisRequest(d)} />
  );
  return (
    <section className={`page item-page${factsUnchanged ? ' facts-unchanged' : ''}`}>
      <div className="item-topline">
        <p className="breadcrumb">
          <Link href={inboxPath(search)} className="breadcrumb-link">
            ← Inbox
          </Link>
        </p>
        <PresenceNote viewers={viewers} />
      </div>
      {decision.outcome && (
        <OutcomeBanner
          ref={decision.outcomeRef}
          status={decision.outcome.status}
          message={decision.outcome.message}
          detail={d}
          myGroups={session.groups}
          repair={decision.outcome.repair}
          currency={currency}
          decided={decision.outcome.decided}
          appNowMs={appNowMs}
        />
      )}
      {news && (
        <LiveChangeNotice
          news={news}
          appNowMs={appNowMs}
          onRefresh={() => {
            decision.forget();
            void refresh();
          }}
        />
      )}
      <div className="item-grid">
        <div className="item-main">
          <ItemSummary detail={d} currency={currency} appNowMs={appNowMs} />
          {payment}
          {d.item && <WhyPanel detail={d} session={session} currency={currency} offsetMs={offsetMs} />}
          <section className="panel facts-panel" aria-labelledby="facts-title">
            {factsUnchanged ? (
              // Nothing moved since the agent asked: one line says so, the table is a click away.
              <details className="facts-fold">
                <summary>
                  <h2 id="facts-title">Facts: nothing changed since the request</h2>
                </summary>
                {factTable}
              </details>
            ) : (
              <>
                <h2 id="facts-title">Facts</h2>
                {factTable}
              </>
            )}
          </section>
          <section className="panel history-panel" aria-labelledby="history-title">
            <h2 id="history-title">History</h2>
            <Timeline history={d.history} approvals={d.history_approvals ?? []} currency={currency} appNowMs={appNowMs} displayName={directory.displayName} />
          </section>
          <WhoWasToldPanel notifications={d.notifications} session={session} offsetMs={offsetMs} />
        </div>
        <aside className="item-side" aria-label={session.role === 'approver' ? 'Decision and receipt' : 'Read only, and the receipt'}>
          <p className={`key-notice${keyNotice ? ' is-on' : ''}`} role="status" aria-live="polite">
            {keyNotice}
          </p>
          <ApprovalsPanel detail={d} appNowMs={appNowMs} />
          {session.role === 'approver' ? (
            <DecisionPanel detail={d} session={session} currency={currency} held={holdsDecisions(news)} onChoose={decision.choose} />
          ) : (
            <ReadOnlyPanel />
          )}
          <ReceiptPanel detail={d} />
        </aside>
      </div>
      <ConfirmDialog
        pending={decision.pending}
        busy={decision.busy}
        error={decision.error}
        quickReasons={directory.reject_reasons}
        onConfirm={decision.confirm}
        onCancel={decision.cancel}
      />
    </section>
  );
}
