import type { InboxItem } from './api.ts';

/** What the queue order reads of an item. */
type Ordered = Pick<InboxItem, 'effect_id' | 'breach' | 'due_ms' | 'missed_due_ms' | 'escalated_at_ms'>;

/**
 * The deadline an item is ordered by: its own, or for one breached at the top of its chain (no
 * deadline left) the deadline it missed there, so it ranks by how long it has been overdue; an
 * item with no deadline at all ranks last.
 */
export function orderingDeadlineMs(item: Ordered): number {
  if (item.due_ms !== null) return item.due_ms;
  if (!item.breach) return Number.MAX_SAFE_INTEGER;
  return item.missed_due_ms ?? item.escalated_at_ms;
}

/**
 * The queue order, the same on the server and in every tab: breached first, then the longest
 * overdue (the earliest deadline that passed), then the soonest due, no deadline last, then by
 * effect id. Sorts in place and returns the array.
 */
export function sortQueue<T extends Ordered>(items: T[]): T[] {
  return items.sort(
    (a, b) =>
      Number(b.breach) - Number(a.breach) ||
      orderingDeadlineMs(a) - orderingDeadlineMs(b) ||
      (a.effect_id < b.effect_id ? -1 : a.effect_id > b.effect_id ? 1 : 0),
  );
}
