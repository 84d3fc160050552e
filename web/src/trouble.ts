import type { CurrentFacts, InboxItem } from '../../shared/api.ts';
import { wallToAppMs } from './app-time.ts';
import { itemCurrency } from './currency.ts';
import { formatMinute, formatMoney } from './format.ts';
import type { Tone } from './labels.ts';

// What is wrong with an item before anyone opens it: the payment moved under the request, it is
// disputed, someone refunded it by hand, its deadline passed. Worked out from the item and its
// current facts alone, so the inbox and the item page say the same thing. Until Stripe has been
// read for the display (a new item, a restart), the facts its escalation was journaled with stand
// in, with their own read time: a payment disputed when the agent asked is marked from the start.

/** The kinds of trouble a row can show, most urgent first (the order chips are shown in). */
export const TROUBLE_KINDS = ['breached', 'stale', 'disputed', 'refunded_outside'] as const;
/** One kind of trouble. */
export type TroubleKind = (typeof TROUBLE_KINDS)[number];

/** A mark for each, so a chip never rests on its colour (its words are there too). */
export const TROUBLE_ICONS: Record<TroubleKind, string> = {
  breached: '⚠',
  stale: '⟳',
  disputed: '⚑',
  refunded_outside: '↩',
};

export const TROUBLE_TONES: Record<TroubleKind, Tone> = {
  breached: 'danger',
  stale: 'warning',
  disputed: 'danger',
  refunded_outside: 'info',
};

/** What a filter chip calls each kind. */
export const TROUBLE_LABELS: Record<TroubleKind, string> = {
  breached: 'Breached',
  stale: 'Stale',
  disputed: 'Disputed',
  refunded_outside: 'Refunded outside',
};

/** The payment's figures a row shows, and where they come from. */
export interface ShownFacts {
  figures: CurrentFacts;
  /** When they were read, on the application clock. */
  asOfAppMs: number;
  /** `stripe`: the display cache's latest read; `queued`: the facts journaled when the item reached a person, until Stripe is read again. */
  source: 'stripe' | 'queued';
}

function minorUnits(value: unknown): number | null {
  return typeof value === 'number' && Number.isSafeInteger(value) ? value : null;
}

/** The facts the item's escalation was journaled with, as figures; null when they lack one a row needs. */
export function queuedFactsOf(item: InboxItem): CurrentFacts | null {
  const f = item.facts;
  const received = minorUnits(f.amount_received);
  const byOthers = minorUnits(f.refunded_by_others);
  if (received === null || byOthers === null || typeof f.disputed !== 'boolean') return null;
  return {
    payment_intent: item.request.payment_intent,
    currency: typeof f.currency === 'string' ? f.currency : (itemCurrency(item) ?? ''),
    amount_received: received,
    refunded_by_others: byOthers,
    refunded_outside: minorUnits(f.refunded_outside) ?? 0,
    remaining: received - byOthers,
    disputed: f.disputed,
    as_of_ms: item.escalated_at_ms,
    error: null,
    // Who paid is read for the display only, never journaled: until Stripe is read, nobody is named.
    customer: null,
  };
}

/** The figures to show for an item: Stripe's latest read, else those journaled when it reached a person (read then). */
export function shownFactsOf(item: InboxItem, offsetMs: number): ShownFacts | null {
  if (item.current) return { figures: item.current, asOfAppMs: wallToAppMs(item.current.as_of_ms, offsetMs), source: 'stripe' };
  const queued = queuedFactsOf(item);
  return queued === null ? null : { figures: queued, asOfAppMs: item.escalated_at_ms, source: 'queued' };
}

/** One chip: its words, and a longer sentence for its tooltip. */
export interface Trouble {
  kind: TroubleKind;
  text: string;
  detail: string;
}

/** A short duration for a chip: `2h 10m`, `45m`, `3d 2h`, `40s`. */
export function formatShortDuration(ms: number): string {
  const totalS = Math.max(0, Math.floor(ms / 1000));
  const d = Math.floor(totalS / 86_400);
  const h = Math.floor((totalS % 86_400) / 3600);
  const m = Math.floor((totalS % 3600) / 60);
  if (d > 0) return `${d}d ${h}h`;
  if (h > 0) return `${h}h ${String(m).padStart(2, '0')}m`;
  if (m > 0) return `${m}m`;
  return `${totalS}s`;
}

/**
 * The deadline an item missed, on the application clock, or null when it is not overdue. Its
 * own deadline when that passed; at the top of its chain (breached, no further deadline) the
 * deadline it missed there (or, for a chain with none recorded, when the breach was recorded).
 */
export function overdueSinceMs(item: InboxItem, appNowMs: number): number | null {
  if (item.due_ms !== null) return item.due_ms <= appNowMs ? item.due_ms : null;
  return item.breach ? (item.missed_due_ms ?? item.escalated_at_ms) : null;
}

/** True when the item sits at the last group of its route with no deadline left: nobody else to move it to. */
export function atTopOfChain(item: Pick<InboxItem, 'breach' | 'due_ms'>): boolean {
  return item.breach && item.due_ms === null;
}

/** True when what is left to refund no longer covers the request. */
export function isShort(current: CurrentFacts | null | undefined, amount: number): current is CurrentFacts {
  return !!current && current.remaining < amount;
}

/** The breach chip: how long overdue, or, moved up and due again later, which group missed it. */
function breachTrouble(item: InboxItem, appNowMs: number): Trouble {
  const since = overdueSinceMs(item, appNowMs);
  if (since !== null) {
    return {
      kind: 'breached',
      text: `Breached · overdue ${formatShortDuration(appNowMs - since)}`,
      detail: atTopOfChain(item) ? 'Its deadline passed at the last group of its chain: nobody else will get it.' : 'Its deadline here passed; it moves up at the next check.',
    };
  }
  const moved = item.moved_from;
  const missedAt = moved?.due_ms == null ? '' : ` at ${formatMinute(moved.due_ms, appNowMs)}`;
  return {
    kind: 'breached',
    text: moved ? `Missed by ${moved.group}${missedAt}` : 'Breached earlier',
    detail: moved ? `${moved.group} did not decide by its deadline${missedAt}, so it moved up to ${item.group}, which has a deadline of its own.` : 'A deadline passed earlier and it moved up its chain.',
  };
}

/** Every trouble of an item now, most urgent first (`offsetMs`: the server's application clock minus the browser's). */
export function troublesOf(item: InboxItem, appNowMs: number, offsetMs = 0): Trouble[] {
  const out: Trouble[] = [];
  const currency = item.current?.currency ?? itemCurrency(item);
  const money = (cents: number) => formatMoney(cents, currency);
  if (item.breach) out.push(breachTrouble(item, appNowMs));
  const current = shownFactsOf(item, offsetMs)?.figures;
  if (current) {
    if (isShort(current, item.request.amount)) {
      out.push({
        kind: 'stale',
        text: `Stale: ${money(current.remaining)} left of ${money(item.request.amount)} asked`,
        detail: `Only ${money(current.remaining)} of the ${money(current.amount_received)} paid is left to refund; approving ${money(item.request.amount)} is refused.`,
      });
    }
    if (current.disputed) out.push({ kind: 'disputed', text: 'Disputed', detail: 'The customer disputed this payment with their bank.' });
    if (current.refunded_outside > 0) {
      out.push({
        kind: 'refunded_outside',
        text: 'Refunded outside Interlock',
        detail: `${money(current.refunded_outside)} was refunded outside Interlock (the dashboard or another system).`,
      });
    }
  }
  return out;
}
