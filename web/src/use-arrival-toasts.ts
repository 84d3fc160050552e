import { useEffect } from 'react';
import { itemCurrency } from './currency.ts';
import { formatMinute, formatMoney } from './format.ts';
import type { MovedUp } from '../../shared/api.ts';
import type { LiveFeed } from './live.ts';
import { itemPath } from './router.ts';
import { showToast, toastWithKey } from './toasts.ts';

/** What the group an item left is told: where it went and whose deadline passed when. */
export function movedUpText(moved: MovedUp, appNowMs: number): string {
  const at = moved.missed_due_ms === null ? '' : ` at ${formatMinute(moved.missed_due_ms, appNowMs)}`;
  return `Moved up: ${formatMoney(moved.amount, moved.currency)} refund ${moved.request_id} went to ${moved.to_group}; ${moved.from_group} missed its deadline${at}`;
}

/** Arrivals close together share one toast, counting up, instead of stacking. */
const ARRIVALS_KEY = 'arrivals';

/**
 * A toast for each item new in my inbox, on every page: the person may be on another item. Items
 * the page already knew (an update, a reconnect) say nothing; several at once become one count.
 */
export function useArrivalToasts(feed: LiveFeed | null): void {
  useEffect(() => {
    if (!feed) return;
    let known: Set<string> | null = null;
    let counted = 0;
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
        if (movedUp) showToast({ tone: 'info', text: movedUpText(movedUp, Date.now() + feed.getState().offsetMs), link: { href: itemPath(effectId), label: 'Open' } });
        return;
      }
      if (known.has(effectId)) return;
      known.add(effectId);
      counted = toastWithKey(ARRIVALS_KEY) ? counted + 1 : 1;
      const one = `New: ${formatMoney(item.request.amount, itemCurrency(item))} refund ${item.request.id}`;
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
