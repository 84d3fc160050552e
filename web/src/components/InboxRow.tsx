import type { InboxItem, Viewer } from '../../../shared/api.ts';
import { itemCurrency } from '../currency.ts';
import { beneficiaryName, formatAgoShort, formatFull, formatMinute, formatMoney, isoOf } from '../format.ts';
import { useDirectory } from '../directory.ts';
import { useNowMs } from '../hooks.ts';
import { levelLabel } from '../labels.ts';
import { itemPath } from '../router.ts';
import { Link } from './Link.tsx';
import { viewersSentence } from './PresenceNote.tsx';
import { ReasonSummary } from './ReasonSummary.tsx';
import { SlaCountdown } from './SlaCountdown.tsx';
import { FactsNow, TroubleChips } from './TroubleChips.tsx';
import { escalationWhy, failedRuleWords } from '../../../shared/escalation-words.ts';
import { formatShortDuration } from '../trouble.ts';

interface InboxRowProps {
  item: InboxItem;
  offsetMs: number;
  fresh: boolean;
  /** The inbox's filter query, carried to the item page. */
  search: string;
  /** Others looking at the item now. */
  viewers: readonly Viewer[];
  /** Shown to someone who decides nothing (finance). */
  reader?: boolean;
  /** The signed-in person's login: their own approval is told apart from someone else's. */
  user?: string;
}

/** The link that opens an item; its box covers the whole row, so the row is one click target. */
function RowLink({ item, search, amount }: { item: InboxItem; search: string; amount: string }) {
  return (
    <Link href={itemPath(item.effect_id, search)} className="row-link">
      <span className="amount">{amount}</span>
      <span className="sr-only"> refund, request {item.request.id}</span>
    </Link>
  );
}

/**
 * Who paid, as Stripe's latest read of the charge's billing details names them: the name, else
 * the email; null when they name no one or Stripe was not read yet.
 */
export function customerOf(item: InboxItem): string | null {
  const customer = item.current?.customer;
  return customer?.name ?? customer?.email ?? null;
}

/** The agent's flags on the request (`vip`, `repeat_customer`), as they sent them. */
function flagsOf(item: InboxItem): string[] {
  return Array.isArray(item.request.flags) ? item.request.flags.filter((flag): flag is string => typeof flag === 'string') : [];
}

/** The agent's flags as tags. */
function FlagTags({ flags }: { flags: readonly string[] }) {
  if (flags.length === 0) return null;
  return (
    <span className="flag-tags">
      <span className="sr-only">Flags: </span>
      {flags.map((flag) => (
        <span key={flag} className="flag-tag" data-flag={flag}>
          <span aria-hidden="true">⚑ </span>
          {flag}
        </span>
      ))}
    </span>
  );
}

/**
 * Where the item has been, as an incident view says it: when the agent (named beside the ids)
 * asked, how long it has waited for a person, and, after it moved up, which group missed its
 * deadline and when.
 */
function EscalationFacts({ item, appNowMs }: { item: InboxItem; appNowMs: number }) {
  const moved = item.moved_from;
  return (
    <p className="row-escalation">
      {moved && (
        <span className="row-missed" data-missed-by={moved.group}>
          Missed by <strong>{moved.group}</strong>
          {moved.due_ms !== null && (
            <>
              {' '}
              at{' '}
              <time dateTime={isoOf(moved.due_ms)} title={formatFull(moved.due_ms)}>
                {formatMinute(moved.due_ms, appNowMs)}
              </time>
            </>
          )}
          {' · '}
        </span>
      )}
      <span className="row-asked">
        asked{' '}
        <time dateTime={isoOf(item.asked_at_ms)} title={formatFull(item.asked_at_ms)}>
          {formatMinute(item.asked_at_ms, appNowMs)}
        </time>
      </span>
      {' · '}
      <span className="row-waited">waiting {formatShortDuration(appNowMs - item.waiting_since_ms)}</span>
    </p>
  );
}

/**
 * Where a two-approver item stands: how many of the approvals it needs are in and whose, so a
 * second approver sees at once that one is, and the first that it waits for someone else.
 * Nothing when one approver is enough.
 */
function approvalsWords(item: InboxItem, user: string | undefined, displayName: (login: string) => string): { short: string; long: string } | null {
  const approvals = item.approvals;
  if (!approvals) return null;
  const count = `${approvals.given.length} of ${approvals.required}`;
  if (approvals.given.length === 0) return { short: `0/${approvals.required}`, long: `Needs ${approvals.required} approvers, none yet` };
  const mine = approvals.given.some((a) => a.by === user);
  const others = approvals.given.filter((a) => a.by !== user).map((a) => displayName(a.by));
  const who = [...(mine ? ['you'] : []), ...others].join(' and ');
  const left = approvals.required - approvals.given.length;
  const next = mine ? `needs ${left === 1 ? 'someone else' : `${left} more people`}` : `needs ${left} more`;
  return { short: `${approvals.given.length}/${approvals.required}`, long: `Approvals ${count}: ${who} approved; ${next}` };
}

function ApprovalsCount({ item, user, compact = false }: { item: InboxItem; user: string | undefined; compact?: boolean }) {
  const { displayName } = useDirectory();
  const words = approvalsWords(item, user, displayName);
  if (words === null) return null;
  if (compact) {
    return (
      <span className="approvals-chip" title={words.long}>
        <span aria-hidden="true">{words.short}</span>
        <span className="sr-only">{words.long}</span>
      </span>
    );
  }
  return <p className="row-approvals approvals-chip">{words.long}</p>;
}

/** One open item as a card: how much, for which payment, what is wrong, why it needs a person, where it sits, how long is left. */
export function InboxRow({ item, offsetMs, fresh, search, viewers, reader = false, user }: InboxRowProps) {
  const appNowMs = useNowMs() + offsetMs;
  const currency = itemCurrency(item);
  const amount = formatMoney(item.request.amount, currency);
  const paid = typeof item.facts.amount_received === 'number' ? formatMoney(item.facts.amount_received, currency) : null;
  const customer = customerOf(item);
  const { displayName } = useDirectory();
  return (
    <li className={`inbox-row${item.breach ? ' breached' : ''}${fresh ? ' fresh' : ''}`} data-effect-id={item.effect_id} data-request-id={item.request.id}>
      <div className="row-amount">
        <RowLink item={item} search={search} amount={amount} />
        {paid && <span className="amount-of">of {paid} paid</span>}
      </div>
      <div className="row-main">
        <p className="row-ids">
          <span className="id-chip" title="Request id">
            <span className="id-label">Request</span> {item.request.id}
          </span>
          <span className="id-chip mono" title="Payment intent">
            {item.request.payment_intent}
          </span>
          {customer && (
            <span className="row-customer" title="Customer, as the charge's billing details name them">
              <span className="sr-only">Customer: </span>
              {customer}
            </span>
          )}
          <span className="row-agent">
            by <strong>{item.request.agent}</strong>
          </span>
          {item.request.on_behalf_of && <span className="made-for">made for {beneficiaryName(item.request.on_behalf_of, displayName)}</span>}
          <FlagTags flags={flagsOf(item)} />
        </p>
        <TroubleChips item={item} appNowMs={appNowMs} offsetMs={offsetMs} />
        <ApprovalsCount item={item} user={user} />
        <ReasonSummary item={item} currency={currency} reader={reader} />
        <EscalationFacts item={item} appNowMs={appNowMs} />
        {item.request.reason && <p className="agent-reason">“{item.request.reason}”</p>}
      </div>
      <div className="row-side">
        <SlaCountdown dueMs={item.due_ms} breach={item.breach} offsetMs={offsetMs} missedDueMs={item.breach ? (item.missed_due_ms ?? item.escalated_at_ms) : null} compact />
        <p className="row-group">
          <span className="group-name">{item.group}</span> <span className="muted">· {levelLabel(item.level)}</span>
        </p>
        <FactsNow item={item} currency={currency} offsetMs={offsetMs} appNowMs={appNowMs} />
        {viewers.length > 0 && (
          <p className="row-viewers">
            <span aria-hidden="true">👁 </span>
            {viewersSentence(viewers)}
          </p>
        )}
      </div>
    </li>
  );
}

/** One open item on one line, for working a long queue: amount, request and agent, who paid, when asked, why and flags, trouble, deadline, group. */
export function CompactInboxRow({ item, offsetMs, fresh, search, viewers, user }: InboxRowProps) {
  const appNowMs = useNowMs() + offsetMs;
  const currency = itemCurrency(item);
  const amount = formatMoney(item.request.amount, currency);
  // How each rule failed, as the escalation worded them ("over $50.00 · disputed"), else the reason.
  const failed = failedRuleWords(item).length > 0;
  const why = escalationWhy(item);
  // A flag the failed rules' words already name ("flag: vip") is not tagged twice.
  const named = new Set(why.split(/[\s:,·]+/));
  const flags = flagsOf(item);
  const tagged = flags.filter((flag) => !named.has(flag));
  const customer = customerOf(item);
  const { displayName } = useDirectory();
  const madeFor = item.request.on_behalf_of ? beneficiaryName(item.request.on_behalf_of, displayName) : null;
  return (
    <li
      className={`inbox-row compact-row${item.breach ? ' breached' : ''}${fresh ? ' fresh' : ''}`}
      data-effect-id={item.effect_id}
      data-request-id={item.request.id}
    >
      <div className="c-amount">
        <RowLink item={item} search={search} amount={amount} />
      </div>
      <div className="c-request" title={`${item.request.id} · ${item.request.payment_intent} · by ${item.request.agent}${madeFor ? ` · made for ${madeFor}` : ''}`}>
        <span className="mono">{item.request.id}</span> <span className="muted">· {item.request.agent}</span>
        {madeFor && <span className="made-for"> · made for {madeFor}</span>}
      </div>
      <div className="c-customer" title={customer ? `Customer: ${customer}` : undefined}>
        {customer && (
          <>
            <span className="sr-only">Customer: </span>
            {customer}
          </>
        )}
      </div>
      <div className="c-asked">
        <time dateTime={isoOf(item.asked_at_ms)} title={`Asked ${formatFull(item.asked_at_ms)}`}>
          asked {formatAgoShort(item.asked_at_ms, appNowMs)}
        </time>
      </div>
      <div className="c-why" title={flags.length > 0 ? `${why} · flags: ${flags.join(', ')}` : why}>
        <FlagTags flags={tagged} />
        {failed && <span className="sr-only">Failed rules: </span>}
        <span className="c-why-text">{why}</span>
      </div>
      <div className="c-trouble">
        <TroubleChips item={item} appNowMs={appNowMs} offsetMs={offsetMs} />
        <ApprovalsCount item={item} user={user} compact />
        {viewers.length > 0 && (
          <span className="row-viewers" title={viewersSentence(viewers)}>
            <span aria-hidden="true">👁</span>
            <span className="sr-only">{viewersSentence(viewers)}</span>
          </span>
        )}
      </div>
      <div className="c-due">
        <SlaCountdown dueMs={item.due_ms} breach={item.breach} offsetMs={offsetMs} missedDueMs={item.breach ? (item.missed_due_ms ?? item.escalated_at_ms) : null} compact />
      </div>
      <div className="c-group">
        <span className="group-name">{item.group}</span>
      </div>
    </li>
  );
}
