import { useEffect } from 'react';
import { itemCurrency } from './currency.ts';
import { formatMinute, formatMoney } from './format.ts';
import type { InboxItem, MovedUp } from '../../shared/api.ts';
import type { LiveFeed } from './live.ts';
import { itemPath } from './router.ts';
import { isOwnRepair, showToast, toastWithKey } from './toasts.ts';

/** What the group an item left is told: where it went and whose deadline passed when. */
export function movedUpText(moved: MovedUp, appNowMs: number): string {
  const at = moved.missed_due_ms === null ? '' : ` at ${formatMinute(moved.missed_due_ms, appNowMs)}`;
  return `Moved up: ${formatMoney(moved.amount, moved.currency)} refund ${moved.request_id} went to ${moved.to_group}; ${moved.from_group} missed its deadline${at}`;
}

/**
 * A new item in words: its amount and the request as the agent named it; a repair's new request
 * is named by the request it replaces, never by its own id (`case-4471:repair:74a2edc9`).
 */
export function arrivalText(item: InboxItem): string {
  const amount = formatMoney(item.request.amount, itemCurrency(item));
  const repairOf = item.request.repair_of;
  return repairOf ? `New: ${amount} refund, a repair of ${repairOf}` : `New: ${amount} refund ${item.request.id}`;
}

/** Several items moved up at once: how many, where to, and which of my groups missed their deadlines. */
export function movedUpCountText(moved: readonly MovedUp[]): string {
  const from = [...new Set(moved.map((m) => m.from_group))].join(', ');
  const to = [...new Set(moved.map((m) => m.to_group))].join(', ');
  return `${moved.length} items moved up to ${to}; ${from} missed their deadlines`;
}

/** Moved-up items close together share one toast. */
const MOVED_KEY = 'moved-up';

/** Arrivals close together share one toast, counting up, instead of stacking. */
const ARRIVALS_KEY = 'arrivals';

/**
 * A toast for each item new in my inbox, on every page: the person may be on another item. Items
 * the page already knew (an update, a reconnect) and the repairs this person sent say nothing;
 * several at once become one count.
 */
export function useArrivalToasts(feed: LiveFeed | null): void {
  useEffect(() => {
    if (!feed) return;
    let known: Set<string> | null = null;
    let counted = 0;
    // Items that moved up together (an SLA tick after a quiet hour) share one toast too.
    let moved: MovedUp[] = [];
    const seed = () => {
      const items = feed.getState().items;
      if (known === null && items !== null) known = new Set(items.map((i) => i.effect_id));
    };
    seed();
    const unsubscribe = feed.subscribe(seed);
    const unlisten = feed.onItem((effectId, item, movedUp) => {
      if (known === null) return;
      if (!item) {
        known.delete(effectId);
        if (movedUp) {
          moved = toastWithKey(MOVED_KEY) ? [...moved, movedUp] : [movedUp];
          const text = moved.length === 1 ? movedUpText(movedUp, Date.now() + feed.getState().offsetMs) : movedUpCountText(moved);
          showToast({ key: MOVED_KEY, tone: 'info', text, link: moved.length === 1 ? { href: itemPath(effectId), label: 'Open' } : null });
        }
        return;
      }
      if (known.has(effectId)) return;
      known.add(effectId);
      // A person's own action is not announced back to them: the decision's own toast said it.
      if (isOwnRepair(item.request.repair_of)) return;
      counted = toastWithKey(ARRIVALS_KEY) ? counted + 1 : 1;
      const one = arrivalText(item);
      showToast({
        key: ARRIVALS_KEY,
        tone: 'info',
        text: counted === 1 ? one : `${counted} new items in your inbox`,
        link: counted === 1 ? { href: itemPath(effectId), label: 'Open' } : { href: '/', label: 'Inbox' },
      });
    });
    return () => {
      unsubscribe();
      unlisten();
    };
  }, [feed]);
}
