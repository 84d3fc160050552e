import type { ChainSummary } from '../inbox/summary.ts';
import { summaryState } from '../inbox/summary.ts';
import type { MessageState } from '../outbox/state.ts';

// What the metrics say of the journal, computed when they are scraped from the views the
// server already keeps (the inbox's chain summaries; the outbox's counts, moved with each message
// in its derived tables), never counted on the side: a restart, or a second process on the same
// journal, reads the same figures.

/** Where the refunds the inbox owns stand now. */
export interface ItemFigures {
  /** Open escalations waiting for a person, by the group they are routed to now. */
  queuedByGroup: Map<string, number>;
  /** Open escalations past the deadline at the top of their route, by group. */
  breachedByGroup: Map<string, number>;
  /** Refunds whose DISPATCHED has no outcome yet: sends in flight (or a crash's, until recovery settles them). */
  sending: number;
  /** Refunds whose outcome nobody can know (AMBIGUOUS, never sent again); a person must look. */
  ambiguous: number;
}

/** Count the open items of the chains `owned` says belong to the inbox. */
export function itemFigures(chains: Iterable<ChainSummary>, owned: (summary: ChainSummary) => boolean): ItemFigures {
  const figures: ItemFigures = { queuedByGroup: new Map(), breachedByGroup: new Map(), sending: 0, ambiguous: 0 };
  const add = (counts: Map<string, number>, group: string) => counts.set(group, (counts.get(group) ?? 0) + 1);
  for (const summary of chains) {
    if (!owned(summary)) continue;
    const state = summaryState(summary);
    if (state === 'SENDING') figures.sending += 1;
    if (summary.ambiguous && summary.committed === null) figures.ambiguous += 1;
    if (state !== 'ESCALATED' || summary.latest === null) continue;
    add(figures.queuedByGroup, summary.latest.group);
    if (summary.breached) add(figures.breachedByGroup, summary.latest.group);
  }
  return figures;
}

/** Where one message stands: delivered, given up, retrying after a failed attempt, not tried yet, or held for a digest. */
export const MESSAGE_DELIVERIES = ['delivered', 'given_up', 'retrying', 'pending', 'held'] as const;
/** One message delivery state. */
export type MessageDelivery = (typeof MESSAGE_DELIVERIES)[number];

/** A message's delivery state, from its chain alone. */
export function messageDelivery(message: Pick<MessageState, 'delivered' | 'gaveUp' | 'attempts' | 'held'>): MessageDelivery {
  if (message.delivered) return 'delivered';
  if (message.gaveUp) return 'given_up';
  if (message.attempts > 0) return 'retrying';
  return message.held === null ? 'pending' : 'held';
}
