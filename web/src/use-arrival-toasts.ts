import { useEffect } from 'react';
import { itemCurrency } from './currency.ts';
import { formatMoney } from './format.ts';
import type { LiveFeed } from './live.ts';
import { itemPath } from './router.ts';
import { isOwnRepair, showToast, toastWithKey } from './toasts.ts';

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
    const seed = () => {
      const items = feed.getState().items;
      if (known === null && items !== null) known = new Set(items.map((i) => i.effect_id));
    };
    seed();
    const unsubscribe = feed.subscribe(seed);
    const unlisten = feed.onItem((effectId, item) => {
      if (known === null) return;
      if (!item) {
        known.delete(effectId);
        return;
      }
      if (known.has(effectId)) return;
      known.add(effectId);
      // A person's own action is not announced back to them: the decision's own toast said it.
      if (isOwnRepair(item.request.repair_of)) return;
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
