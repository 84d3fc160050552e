import type { Ref } from 'react';
import type { DecisionShown, ItemDetail } from '../../../shared/api.ts';
import type { Repair } from '../../../shared/entries.ts';
import { isJsonObject } from '../../../shared/json.ts';
import { LANDED_STATUSES, type Status } from '../../../shared/statuses.ts';
import { formatFull, formatMinute, formatMoney, isoOf } from '../format.ts';
import { levelLabel, OUTCOME_LABELS, outcomeOf, stateSentence, type Tone } from '../labels.ts';
import { Link } from './Link.tsx';

const LANDED: ReadonlySet<string> = new Set(LANDED_STATUSES);

/** What someone else did, as a verb; a missing action does not compile. */
const DECIDED_VERBS: Record<DecisionShown['action'], string> = {
  approve: 'approved it',
  reject: 'rejected it',
  repair: 'accepted a repair',
};

/** "Bea Novak approved it at 14:02", and her reason when she gave one: the decision that came first. */
export function RaceNotice({ decided, appNowMs }: { decided: DecisionShown; appNowMs: number }) {
  return (
    <p className="outcome-race" data-testid="race-notice">
      <strong>{decided.display_name || decided.by}</strong> {DECIDED_VERBS[decided.action]} at{' '}
      <time dateTime={isoOf(decided.at_ms)} title={formatFull(decided.at_ms)}>
        {formatMinute(decided.at_ms, appNowMs)}
      </time>
      {decided.reason ? `: “${decided.reason}”` : '.'}
    </p>
  );
}

/** The request a repair decision created, from the latest DECIDED entry. */
function repairChild(detail: ItemDetail): string | null {
  for (let i = detail.history.length - 1; i >= 0; i--) {
    const entry = detail.history[i];
    if (entry?.kind !== 'DECIDED') continue;
    return isJsonObject(entry.repair) && typeof entry.repair.request_id === 'string' ? entry.repair.request_id : null;
  }
  return null;
}

interface OutcomeBannerProps {
  status: Status;
  message: string;
  detail: ItemDetail;
  myGroups: readonly string[];
  /** The repair accepted, when the decision was one: the outcome is then about the new request. */
  repair: Repair | null;
  currency: string | null;
  /** Someone else's decision that came first, when this one lost the race. */
  decided: DecisionShown | null;
  /** The application clock now, for "at 14:02". */
  appNowMs: number;
  ref?: Ref<HTMLDivElement>;
}

/** What the decision did, in the server's words, and where the item stands now. */
export function OutcomeBanner({ status, message, detail, myGroups, repair, currency, decided, appNowMs, ref }: OutcomeBannerProps) {
  let { title, tone }: { title: string; tone: Tone } = outcomeOf(status);
  // The agent's CLOSED is a rejection, a repair or a closed ambiguity: say which.
  if (status === 'CLOSED') title = OUTCOME_LABELS[detail.outcome];
  const child = repairChild(detail);
  const item = detail.item;
  let now = item
    ? myGroups.includes(item.group)
      ? `Back in your inbox for ${item.group}, waiting for a decision.`
      : `With ${item.group} (${levelLabel(item.level)}); only its members can decide it.`
    : stateSentence(detail.state, detail.outcome);
  // A repair closes this request and sends a new one: say which amount went out, and which never will.
  if (repair && child) {
    const newAmount = repair.set.amount === undefined ? formatMoney(detail.request.amount, currency) : formatMoney(repair.set.amount, currency);
    if (LANDED.has(status)) title = `Repair sent: ${newAmount} refunded`;
    else if (status === 'QUEUED') title = `Repair accepted: ${newAmount} now waits for its group`;
    now = `This ${formatMoney(detail.request.amount, currency)} request is closed and was never sent; the new request for ${newAmount} replaces it.`;
    tone = LANDED.has(status) ? 'success' : tone;
  }
  return (
    <div ref={ref} tabIndex={-1} className={`outcome outcome-${tone}`} role={tone === 'success' || tone === 'neutral' ? 'status' : 'alert'} data-status={status}>
      <p className="outcome-title">{title}</p>
      {decided && <RaceNotice decided={decided} appNowMs={appNowMs} />}
      <p className="outcome-message">{message}</p>
      <p className="outcome-now">
        <strong>Now:</strong> {now}
        {child && repair && (
          <>
            {' '}
            New request: <Link href={status === 'QUEUED' ? '/' : `/done?q=${encodeURIComponent(child)}`}>{child}</Link>.
          </>
        )}
      </p>
    </div>
  );
}
