import { describe, expect, it } from 'vitest';
import { StripeBudget } from '../../server/stripe/budget.ts';
import { TurnQueue } from '../../server/stripe/turn-queue.ts';
import type { JournalStore } from '../../server/journal/store.ts';
import type { Inbox } from '../../server/inbox/inbox.ts';
import { FakeScheduler } from '../support/fake-scheduler.ts';

// The queue of requests waiting their turn for Stripe: bounded by what the budget sends in ten
// minutes, and telling each request its own expected wait.

/** A queue over a budget of one refund a second whose journal holds nothing (its workers find nothing to send). */
function queueOf(perSecond: number, waitingOnJournal?: () => number) {
  const budget = new StripeBudget({ capacity: { globalPerWindow: 2 * perSecond, endpointPerWindow: perSecond }, clock: new FakeScheduler() });
  const journal = { entries: async () => [] } as unknown as JournalStore;
  const inbox = { submit: async () => 'QUEUED', name: 'inbox', options: {} } as unknown as Pick<Inbox, 'submit' | 'name' | 'options'>;
  return new TurnQueue({ budget, journal, inbox, nowMs: () => 0, ...(waitingOnJournal ? { waitingOnJournal } : {}) });
}

describe('TurnQueue', () => {
  it('is full once it holds what the budget sends in ten minutes (600 at one refund a second)', () => {
    const queue = queueOf(1);
    for (let i = 0; i < 599; i++) queue.enqueue(`e${i}`);
    expect(queue.full).toBe(false);
    queue.enqueue('e599');
    expect(queue.full).toBe(true);
  });

  it('counts the requests every process on the journal has waiting: the bound is the account’s, not each process’s', () => {
    let others = 590;
    const queue = queueOf(1, () => others + queue.length);
    for (let i = 0; i < 9; i++) queue.enqueue(`e${i}`);
    expect(queue.full).toBe(false);
    others = 591;
    expect(queue.full).toBe(true);
  });

  it('tells a queued request the wait of its own place, and a new one the back of the queue', () => {
    const queue = queueOf(10);
    for (let i = 0; i < 45; i++) queue.enqueue(`e${i}`);
    // The first is taken at once; e5 is the fifth still waiting (a second at ten a second), the last the fifth second.
    expect(queue.expectedWaitMs('e5')).toBe(1_000);
    expect(queue.expectedWaitMs('e44')).toBe(5_000);
    expect(queue.expectedWaitMs()).toBe(5_000);
    expect(queue.holds('e44')).toBe(true);
  });
});
