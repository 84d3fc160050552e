import { useRef } from 'react';
import { applyFilters, parseFilters } from './inbox-filters.ts';
import { useLiveFeed, useLiveState } from './live.ts';
import { nextAfter, nextOpenFor } from './next-item.ts';

/**
 * The queue this page was opened from (the inbox's order under the filters in the address bar),
 * kept from the last render that still had this item in it: by the time a decision is answered,
 * the live feed may already have taken the item out.
 */
export function useQueueAround(effectId: string, search: string, reader: string): () => { next: string | null } {
  const live = useLiveState();
  const queue = useRef<string[]>([]);
  const clock = () => ({ appNowMs: Date.now() + live.offsetMs, offsetMs: live.offsetMs, reader });
  const ids = applyFilters(live.items ?? [], parseFilters(search), clock()).map((i) => i.effect_id);
  if (ids.includes(effectId) || queue.current.length === 0) queue.current = ids;
  const feed = useLiveFeed();
  return () => {
    // Never an item this person approved already: it waits for someone else, and `a` could do nothing there.
    const open = nextOpenFor(applyFilters(feed.getState().items ?? [], parseFilters(search), clock()), reader);
    return { next: nextAfter(queue.current, effectId, open) };
  };
}
