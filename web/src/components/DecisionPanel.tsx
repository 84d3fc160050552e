import type { InboxItem, ItemDetail, SessionInfo } from '../../../shared/api.ts';
import type { Change } from '../../../shared/entries.ts';
import { escalationWhy } from '../../../shared/escalation-words.ts';
import type { WhyCode } from '../../../shared/statuses.ts';
import { formatMoney } from '../format.ts';
import { ACTION_LABELS, levelLabel, stateSentence } from '../labels.ts';
import type { PendingDecision } from './ConfirmDialog.tsx';
import { describeChange } from './FactTable.tsx';

/** The reason of an item whose send may or may not have happened: it can only be closed. */
const AMBIGUOUS: WhyCode = 'ambiguous';

/** What is left to refund by the freshest read the page has: the page's own read, else the live facts. */
function remainingNow(detail: ItemDetail): number | null {
  const now = detail.facts_now;
  if (now && typeof now.amount_received === 'number' && typeof now.refunded_by_others === 'number') return now.amount_received - now.refunded_by_others;
  return detail.item?.current?.remaining ?? null;
}

/**
 * What moved since the item was shown, by the freshest read the page has: an approval is checked
 * on exactly the facts the item shows, so any of these refuses it. Once the item is shown again on
 * the new facts, nothing has moved, and approving what it shows is checked on those.
 */
function movedSinceShown(detail: ItemDetail): Change[] {
  const shown = detail.item?.facts;
  const current = detail.item?.current;
  const now: Record<string, unknown> | null = detail.facts_now ?? (current ? { ...current } : null);
  if (!shown || !now) return [];
  return Object.keys(shown)
    .filter((field) => field in now && JSON.stringify(shown[field]) !== JSON.stringify(now[field]))
    .map((field) => ({ field, was: shown[field] ?? null, now: (now[field] ?? null) as Change['now'] }));
}

/**
 * Why approving the original request is refused as things stand, in words, or null when it would
 * be checked and sent: what is left no longer covers it, the payment is disputed, or a fact moved
 * since the item was shown.
 */
/** True when an approval now would be the first of two: it is journaled and nothing is sent until another person approves too. */
export function approvalLeavesOneToGo(detail: ItemDetail): boolean {
  const approvals = detail.approvals;
  if (!approvals) return false;
  return approvals.approvals.filter((a) => a.voided === null).length + 1 < approvals.required;
}

/** The names of those who approved before, when an approval now completes an item two people must approve; empty otherwise. */
export function approvedBefore(detail: ItemDetail): string[] {
  const approvals = detail.approvals;
  if (!approvals) return [];
  const live = approvals.approvals.filter((a) => a.voided === null);
  return live.length + 1 === approvals.required ? live.map((a) => a.display_name) : [];
}

/** Who paid, as the payment names them: the name, else the email; null before a read names them. */
export function customerOf(detail: ItemDetail): string | null {
  const customer = detail.payment?.customer ?? detail.item?.current?.customer ?? null;
  return customer?.name || customer?.email || null;
}

/** What every decision on the item carries for its confirmation and its toast. */
export function decisionBase(detail: ItemDetail, currency: string | null) {
  return {
    amountCents: detail.request.amount,
    currency,
    paymentIntent: detail.request.payment_intent,
    requestId: detail.request.id,
    firstOfTwo: approvalLeavesOneToGo(detail),
    approvedBefore: approvedBefore(detail),
    customer: customerOf(detail),
  };
}

export function staleReasonOf(detail: ItemDetail, currency: string | null): string | null {
  const amount = detail.request.amount;
  const left = remainingNow(detail);
  if (left !== null && left < amount) return `only ${formatMoney(Math.max(0, left), currency)} is left to refund of the ${formatMoney(amount, currency)} asked`;
  if (disputedNow(detail)) return 'the payment is disputed now';
  const changes = movedSinceShown(detail);
  return changes.length > 0 ? `the payment changed since this item was shown (${changes.map((c) => describeChange(c, currency)).join('; ')})` : null;
}

/**
 * The repair that sends the same refund on the new facts ("$60.00 still fits"), when it is
 * offered: accepting it is approving, so the page shows one button for both.
 */
export function stillFitsIndex(item: Pick<InboxItem, 'repairs'>): number | null {
  const index = item.repairs.findIndex((repair) => Object.keys(repair.set).length === 0);
  return index < 0 ? null : index;
}

/** True when the freshest read says the payment is disputed: no repair is ever offered then. */
function disputedNow(detail: ItemDetail): boolean {
  return detail.facts_now?.disputed === true || detail.item?.current?.disputed === true;
}

/** What a person is told when approving the original can only be refused, with no repair to take instead. */
function refusedNote(detail: ItemDetail): string {
  return disputedNow(detail)
    ? 'No repair is offered while the payment is disputed: no refund is safe until the dispute is settled. Approving the original would be refused, so it is not offered.'
    : 'No repair is offered yet. As soon as Interlock reads this change from Stripe (at once when Stripe tells it, else at its next read), the item is shown again here on the new facts, with a repair if one fits them. Approving the original would be refused, so it is not offered until then.';
}

/**
 * Why approving the original request cannot succeed and is not offered, or null when it is: the
 * facts changed (or the payment is disputed) and no repair is offered to take instead. Where a
 * repair is offered, the original stays a second choice whose confirmation says it is refused.
 */
export function originalRefusedWhy(detail: ItemDetail, currency: string | null): string | null {
  const item = detail.item;
  if (!item || item.reason === AMBIGUOUS || detail.approval_block) return null;
  const staleBecause = staleReasonOf(detail, currency);
  if (staleBecause === null) return null;
  const fits = stillFitsIndex(item);
  const repairs = item.repairs.filter((_, index) => index !== fits);
  return repairs.length > 0 || fits !== null ? null : staleBecause;
}

interface DecisionPanelProps {
  detail: ItemDetail;
  session: SessionInfo;
  currency: string | null;
  /** The item moved under the page and is being read again: nothing may be decided on what it showed. */
  held: boolean;
  onChoose: (pending: PendingDecision) => void;
}

/**
 * The decisions this person may take now, each a button that opens the confirmation. When the
 * facts changed, the repair comes first and approving the original is second, with the reason it
 * is refused.
 */
export function DecisionPanel({ detail, session, currency, held, onChoose }: DecisionPanelProps) {
  const item = detail.item;
  const amount = formatMoney(detail.request.amount, currency);
  const base = decisionBase(detail, currency);

  if (!item || !detail.may_decide) {
    const elsewhere = item && !session.groups.includes(item.group);
    return (
      <section className="panel decision-panel" aria-labelledby="decide-title">
        <h2 id="decide-title">Decision</h2>
        <p className="decide-closed">
          {elsewhere
            ? `It is with ${item.group} now (${levelLabel(item.level)}). Only its members can decide it.`
            : `Nothing to decide. ${stateSentence(detail.state, detail.outcome)}`}
        </p>
      </section>
    );
  }

  if (held) {
    return (
      <section className="panel decision-panel" aria-labelledby="decide-title">
        <h2 id="decide-title">Your decision</h2>
        <p className="decide-closed">This item changed while you were looking. Nothing can be decided until the page shows what it is now.</p>
      </section>
    );
  }

  const ambiguous = item.reason === AMBIGUOUS;
  const staleBecause = staleReasonOf(detail, currency);
  const refused = originalRefusedWhy(detail, currency);
  // The same refund on the new facts is the approval itself: one button, not a repair and an approval.
  const fits = stillFitsIndex(item);
  const fitting = fits === null ? undefined : item.repairs[fits];
  // A repair sends a refund as an approval does: the person it benefits is offered none.
  const beneficiary = detail.approval_block?.code === 'beneficiary';
  const repairs = beneficiary ? [] : item.repairs.map((repair, index) => ({ repair, index })).filter(({ index }) => index !== fits);
  const hasRepairs = repairs.length > 0;
  return (
    <section className="panel decision-panel" aria-labelledby="decide-title">
      <h2 id="decide-title">Your decision</h2>
      <p className="decide-lede">
        {/* Why it needs a person, here too: on a phone the decision comes before the panel that says it. */}
        <span className="decide-why">
          Needs you: <strong>{escalationWhy(item)}</strong>.{' '}
        </span>
        For <strong>{item.group}</strong>. Each choice asks you to confirm first.
      </p>
      {staleBecause && !ambiguous && (
        <p className="decide-warning" id="stale-because">
          <strong>The facts changed:</strong> {staleBecause}.
        </p>
      )}
      {repairs.map(({ repair, index }) => (
        <button
          key={`${repair.code}-${repair.set.amount ?? 'same'}`}
          type="button"
          className="button primary wide decide-button repair-button"
          aria-keyshortcuts={index === 0 ? 'p' : undefined}
          onClick={() => onChoose({ ...base, action: 'repair', repairIndex: index, repair })}
        >
          <span className="decide-main">
            {ACTION_LABELS.repair}: {repair.why}
          </span>
          {index === 0 && <span className="key-hint" aria-hidden="true">p</span>}
        </button>
      ))}
      {!ambiguous && (
        <>
          {staleBecause && !hasRepairs && !beneficiary && (
            <p className="decide-note" id="approve-refused">
              {refusedNote(detail)}
            </p>
          )}
          {staleBecause && <p className="decide-or">{hasRepairs ? 'Or, as the agent asked:' : 'As the agent asked:'}</p>}
          {detail.approval_block ? (
            <p className="decide-warning approval-block" role="note">
              <strong>You cannot approve it.</strong> {detail.approval_block.why}
            </p>
          ) : fitting !== undefined && fits !== null ? (
            <>
              <p className="decide-note" id="fits-why">
                On the facts now: {fitting.why}.
              </p>
              <button
                type="button"
                className="button wide decide-button approve-button primary"
                aria-keyshortcuts="a p"
                aria-describedby="fits-why"
                onClick={() => onChoose({ ...base, action: 'repair', repairIndex: fits, repair: fitting })}
              >
                <span className="decide-main">
                  {ACTION_LABELS.approve} {amount} on the facts now
                </span>
                <span className="key-hint" aria-hidden="true">a</span>
              </button>
            </>
          ) : refused !== null ? (
            // Approving would be refused for sure: shown, not pressable, with why (read with the button).
            <button
              type="button"
              className="button wide decide-button approve-button is-refused"
              aria-disabled="true"
              aria-describedby="stale-because approve-refused"
              onClick={() => undefined}
            >
              <span className="decide-main">
                Approve the original {amount}
                <span className="decide-sub">not offered: it would be refused</span>
              </span>
            </button>
          ) : (
            <button
              type="button"
              className={`button wide decide-button approve-button${hasRepairs || staleBecause ? '' : ' primary'}`}
              aria-keyshortcuts="a"
              aria-describedby={staleBecause ? 'stale-because' : undefined}
              onClick={() => onChoose({ ...base, action: 'approve', staleBecause })}
            >
              <span className="decide-main">{staleBecause ? `Approve the original ${amount}` : `${ACTION_LABELS.approve} ${amount}`}</span>
              <span className="key-hint" aria-hidden="true">a</span>
            </button>
          )}
          <button type="button" className="button wide decide-button danger-outline" aria-keyshortcuts="r" onClick={() => onChoose({ ...base, action: 'reject' })}>
            <span className="decide-main">{ACTION_LABELS.reject}</span>
            <span className="key-hint" aria-hidden="true">r</span>
          </button>
        </>
      )}
      {ambiguous && (
        <>
          <p className="decide-warning">This refund may already have reached Stripe. Check the payment there, then close it: it is never resent.</p>
          <button type="button" className="button wide decide-button danger" aria-keyshortcuts="x" onClick={() => onChoose({ ...base, action: 'close' })}>
            <span className="decide-main">{ACTION_LABELS.close} without sending</span>
            <span className="key-hint" aria-hidden="true">x</span>
          </button>
        </>
      )}
    </section>
  );
}
