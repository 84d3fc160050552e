import type { HistoryApproval } from '../../../shared/api.ts';
import { type Change, DECISIONS, type Decision, type Entry } from '../../../shared/entries.ts';
import { escalationWhy } from '../../../shared/escalation-words.ts';
import { isJsonObject, type Json } from '../../../shared/json.ts';
import { assertNever, whyFor } from '../../../shared/statuses.ts';
import { entryAppTimes } from '../app-time.ts';
import { formatFull, formatMoney, formatWhen, isoOf, namesInWords } from '../format.ts';
import { humanize, levelLabel, type Tone, VOID_REASON_WORDS } from '../labels.ts';
import { describeChange } from './FactTable.tsx';

/** A person's decision in the journal, in words; a missing decision does not compile. */
const DECISION_TITLES: Record<Decision, string> = {
  approve: 'Approved',
  reject: 'Rejected: never sent',
  repair: 'Accepted the repair',
};
const DECISION_TONES: Record<Decision, Tone> = { approve: 'success', reject: 'neutral', repair: 'success' };

interface Step {
  title: string;
  who: string | null;
  group: string | null;
  notes: string[];
  tone: Tone;
}

const text = (value: Json | undefined): string => (typeof value === 'string' ? value : value === undefined || value === null ? '' : String(value));
const money = (value: Json | undefined, currency: string | null): string => (typeof value === 'number' ? formatMoney(value, currency) : '?');

/** Whose authority a lease is: a person's name, `policy`, or nobody. */
function leaseBy(lease: Json | undefined): string | null {
  return isJsonObject(lease) && typeof lease.by === 'string' ? lease.by : null;
}

/** Whose approvals a person's lease carries, by login, the earliest first: both of a refund two people approved. */
function leaseApprovers(lease: Json | undefined): string[] {
  if (!isJsonObject(lease) || typeof lease.by !== 'string' || lease.by === 'policy') return [];
  const earlier = Array.isArray(lease.co_approvals) ? lease.co_approvals.flatMap((a) => (isJsonObject(a) && typeof a.by === 'string' ? [a.by] : [])) : [];
  return [...earlier, lease.by];
}

/** What an entry's words depend on beyond the entry itself. */
export interface StepContext {
  isFirstProposal: boolean;
  currency: string | null;
  /** The group of the escalation before this one, if any: a breach that stayed there missed its deadline at the top. */
  previousGroup: string | null;
  /** A person's name as the page shows it. */
  displayName: (name: string) => string;
  /** For an approval of an escalation two people must approve: which of how many, and whether it completed it or no longer counts. */
  approval?: HistoryApproval;
}

/** An approval of a two-approver escalation in words: the first of two, the one that completed it, or voided and why. */
function approvalWords(approval: HistoryApproval): { title: string; notes: string[]; tone: Tone } {
  const place = `Approved, ${approval.nth} of ${approval.required}`;
  if (approval.completes) return { title: `${place}: approved for sending`, notes: [], tone: 'success' };
  if (approval.voided !== null) return { title: `${place}: voided`, notes: [`No longer counts, ${VOID_REASON_WORDS[approval.voided]}`], tone: 'neutral' };
  return { title: `${place}: the first approval`, notes: ['Nothing is sent until a second person approves'], tone: 'info' };
}

/** One journal entry in words: who did what, for which group. */
export function describeEntry(entry: Entry, { isFirstProposal, currency, previousGroup, displayName, approval }: StepContext): Step {
  switch (entry.kind) {
    case 'PROPOSED': {
      const request = isJsonObject(entry.request) ? entry.request : {};
      const effect = isJsonObject(entry.effect) ? entry.effect : {};
      const by = leaseBy(entry.lease);
      if (isFirstProposal) {
        const reason = text(request.reason);
        return { title: `Asked for a refund of ${money(effect.amount, currency)}`, who: text(request.agent) || null, group: null, notes: reason ? [`“${reason}”`] : [], tone: 'info' };
      }
      const people = leaseApprovers(entry.lease).map(displayName);
      const under =
        by === 'policy' ? 'under the policy rules' : people.length > 1 ? `under the approvals of ${namesInWords(people)}` : by ? `under ${displayName(by)}’s approval` : 'again';
      return { title: `Prepared to send ${money(effect.amount, currency)} ${under}`, who: 'Interlock', group: null, notes: [], tone: 'info' };
    }
    case 'AUTHORIZED': {
      const by = leaseBy(entry.lease);
      const group = isJsonObject(entry.lease) ? text(entry.lease.group) || null : null;
      const people = leaseApprovers(entry.lease).map(displayName);
      const whose = people.length > 1 ? `the approvals of ${namesInWords(people)} are live` : `${by ? `${displayName(by)}’s` : 'the'} approval is live`;
      return { title: by === 'policy' ? 'Cleared by policy: every rule passed' : `Authority checked: ${whose}`, who: 'Interlock', group, notes: [], tone: 'info' };
    }
    case 'DISPATCHED': {
      const effect = isJsonObject(entry.effect) ? entry.effect : {};
      return { title: `Sent to Stripe: a refund of ${money(effect.amount, currency)}`, who: 'Interlock', group: null, notes: [], tone: 'info' };
    }
    case 'COMMITTED': {
      const result = isJsonObject(entry.result) ? entry.result : {};
      const refund = text(result.refund) || text(entry.found);
      const amount = result.amount === undefined ? '' : ` for ${money(result.amount, currency)}`;
      return { title: `Stripe accepted the refund${amount}`, who: 'Stripe', group: null, notes: refund ? [`Refund ${refund}`] : [], tone: 'success' };
    }
    case 'REFUSED': {
      const code = text(entry.code);
      const reasons = Array.isArray(entry.reason) ? entry.reason.map(text) : [];
      const changes = Array.isArray(entry.changes) ? (entry.changes as unknown as Change[]) : [];
      const notes = changes.length ? changes.map((c) => describeChange(c, currency)) : reasons;
      return { title: `Refused before sending: ${whyFor(code)}`, who: 'Interlock', group: null, notes, tone: 'warning' };
    }
    case 'AMBIGUOUS':
      return { title: 'Outcome unknown: it may or may not have reached Stripe', who: 'Interlock', group: null, notes: [whyFor('ambiguous')], tone: 'danger' };
    case 'ESCALATED': {
      const level = typeof entry.level === 'number' ? entry.level : 0;
      const group = text(entry.group);
      const routedTo = Array.isArray(entry.routed_to) ? entry.routed_to.map((name) => displayName(text(name))).join(', ') : '';
      const notes = [`${levelLabel(level)}${routedTo ? ` · members: ${routedTo}` : ''}`];
      if (typeof entry.due_ms === 'number') notes.push(`Due ${formatFull(entry.due_ms)}`);
      else if (entry.breach === true) notes.push('No later deadline: it stays with this group until decided');
      if (entry.breach === true) notes.push('SLA breached');
      // A breach that stayed in the same group had nowhere to move: the deadline was missed at the top of its chain.
      const headline =
        entry.breach !== true ? 'Routed to a person' : previousGroup === group ? `Deadline missed at ${group}` : 'Moved up after the SLA passed';
      return {
        title: `${headline}: ${escalationWhy(entry)}`,
        who: null,
        group: text(entry.group) || null,
        notes,
        tone: entry.breach === true ? 'danger' : 'warning',
      };
    }
    case 'DECIDED': {
      const repair = isJsonObject(entry.repair) ? entry.repair : null;
      const set = repair && isJsonObject(repair.set) ? repair.set : {};
      const decision = (DECISIONS as readonly string[]).includes(text(entry.decision)) ? (text(entry.decision) as Decision) : null;
      const amount = set.amount === undefined ? '' : `: refund ${money(set.amount, currency)}`;
      // An approval that took the same refund on the new facts made no new request: it is an approval on the facts now.
      const onFactsNow = decision === 'approve' && repair !== null;
      const title = onFactsNow ? 'Approved on the facts now' : decision ? DECISION_TITLES[decision] + (decision === 'repair' ? amount : '') : `Decided: ${text(entry.decision)}`;
      const notes = repair && !onFactsNow ? [`New request ${text(repair.request_id)}`] : [];
      // Rejections journaled before reasons were kept have none; the step still reads whole without it.
      if (typeof entry.reason === 'string' && entry.reason !== '') notes.unshift(`Reason: “${entry.reason}”`);
      const by = text(entry.by);
      const who = by ? displayName(by) : null;
      if (approval !== undefined && decision === 'approve') {
        const words = approvalWords(approval);
        return { ...words, who, group: text(entry.group) || null, notes: [...words.notes, ...notes] };
      }
      return { title, who, group: text(entry.group) || null, notes, tone: decision ? DECISION_TONES[decision] : 'neutral' };
    }
    case 'CONFIRMED': {
      const status = text(entry.status);
      const tone: Tone = status === 'succeeded' ? 'success' : status === 'failed' || status === 'canceled' ? 'danger' : 'info';
      return { title: `Stripe reported the refund as ${humanize(status).toLowerCase()}`, who: 'Stripe', group: null, notes: [`Refund ${text(entry.refund)} · ${money(entry.amount, currency)} · via ${text(entry.via)}`], tone };
    }
    // Message chains are their own (the outbox); an item's history never holds them.
    case 'MESSAGE':
    case 'ATTEMPT':
    case 'GAVE_UP':
    case 'EPOCH':
    case 'CONFIG':
      return { title: `Message: ${humanize(entry.kind).toLowerCase()}`, who: 'Interlock', group: null, notes: [], tone: 'neutral' };
    default:
      return assertNever(entry);
  }
}

interface TimelineProps {
  history: Entry[];
  /** The approvals of two-approver escalations in the history, by entry hash (`history_approvals`). */
  approvals?: readonly HistoryApproval[];
  currency: string | null;
  /** The application clock now: every time here is on it, as deadlines are. */
  appNowMs: number;
  displayName: (name: string) => string;
}

/** The journal of one item, oldest first, as a readable timeline; times on the application clock, as deadlines are. */
export function Timeline({ history, approvals = [], currency, appNowMs, displayName }: TimelineProps) {
  const approvalOf = new Map(approvals.map((a) => [a.hash, a]));
  const firstProposal = history.findIndex((e) => e.kind === 'PROPOSED');
  const times = entryAppTimes(history);
  let previousGroup: string | null = null;
  return (
    <ol className="timeline">
      {history.map((entry, index) => {
        const approval = approvalOf.get(entry.hash);
        const step = describeEntry(entry, { isFirstProposal: index === firstProposal, currency, previousGroup, displayName, ...(approval === undefined ? {} : { approval }) });
        if (entry.kind === 'ESCALATED') previousGroup = entry.group;
        const atMs = times[index] ?? entry.ts_ms;
        return (
          <li key={entry.hash} className={`timeline-step tone-${step.tone}`} data-kind={entry.kind}>
            <span className="timeline-dot" aria-hidden="true" />
            <div className="timeline-body">
              <p className="timeline-title">{step.title}</p>
              <p className="timeline-meta">
                <time dateTime={isoOf(atMs)} title={formatFull(atMs)}>
                  {formatWhen(atMs, appNowMs)}
                </time>
                {step.who && (
                  <>
                    {' · '}by <strong>{step.who}</strong>
                  </>
                )}
                {step.group && (
                  <>
                    {' · '}
                    {step.who ? 'for ' : ''}
                    <span className="group-name">{step.group}</span>
                  </>
                )}
              </p>
              {step.notes.map((note) => (
                <p key={note} className="timeline-note">
                  {note}
                </p>
              ))}
            </div>
          </li>
        );
      })}
    </ol>
  );
}
