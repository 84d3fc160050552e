import { describe, expect, it } from 'vitest';
import { MemorySignals } from '../../db/memory/signals.ts';
import type { Signals } from '../../db/port/signals.ts';
import { JOURNAL_POLL_MS, JOURNAL_POLL_WOKEN_MS, type JournalWakeUpParts, startJournalWakeUps } from '../../server/app/journal-wakeups.ts';

// The journal's wake-ups as a server hears them: a wake-up past what its views hold catches them
// up, one they hold already costs nothing, a reconnect of the listening connection catches them up,
// and the poll behind is slow only where wake-ups come (PostgreSQL).

/** Views that count their catch-ups and say which poll they were given. */
function fakeViews() {
  const caughtUp = new Set<(seq: number) => void>();
  const views = {
    refreshes: 0,
    pollMs: null as number | null,
    refresh() {
      views.refreshes += 1;
    },
    onCaughtUpUntil(listener: (seq: number) => void) {
      caughtUp.add(listener);
      return () => void caughtUp.delete(listener);
    },
    startPolling(ms: number) {
      views.pollMs = ms;
    },
    stopPolling() {
      views.pollMs = null;
    },
    /** The views caught up to `seq`. */
    at(seq: number) {
      for (const listener of caughtUp) listener(seq);
    },
  };
  return views;
}

/** Signals whose reconnect hooks the test calls. */
function reconnectable(signals: MemorySignals): Signals & { reconnect(): void } {
  const hooks = new Set<() => void>();
  return {
    publish: (channel, payload) => signals.publish(channel, payload),
    subscribe: (channel, listener) => signals.subscribe(channel, listener),
    onReconnect: (hook) => {
      hooks.add(hook);
      return () => void hooks.delete(hook);
    },
    onListenState: (hook) => signals.onListenState(hook),
    close: () => signals.close(),
    reconnect: () => {
      for (const hook of hooks) hook();
    },
  };
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 20));

describe('journal wake-ups', () => {
  it('a wake-up past what the views hold catches them up; one they hold costs nothing; a reconnect catches them up', async () => {
    const signals = reconnectable(new MemorySignals());
    const views = fakeViews();
    let reconnects = 0;
    const onReconnect = () => {
      reconnects += 1;
    };
    const stop = await startJournalWakeUps({ storage: { engine: 'postgresql', signals }, views, onReconnect } satisfies JournalWakeUpParts);
    expect(views.pollMs).toBe(JOURNAL_POLL_WOKEN_MS);
    views.at(10);
    await signals.publish('interlock_journal', '10');
    await settle();
    expect(views.refreshes).toBe(0);
    await signals.publish('interlock_journal', '11');
    await settle();
    expect(views.refreshes).toBe(1);
    // A payload that is no seq still wakes them: a catch-up with nothing new is cheap.
    await signals.publish('interlock_journal', 'x');
    await settle();
    expect(views.refreshes).toBe(2);
    signals.reconnect();
    expect(views.refreshes).toBe(3);
    expect(reconnects).toBe(1);
    stop();
    expect(views.pollMs).toBeNull();
    await signals.publish('interlock_journal', '99');
    signals.reconnect();
    await settle();
    expect(views.refreshes).toBe(3);
  });

  it('on SQLite the views poll every 250 ms, as wake-ups never cross processes there', async () => {
    const views = fakeViews();
    const stop = await startJournalWakeUps({ storage: { engine: 'sqlite', signals: new MemorySignals() }, views });
    expect(views.pollMs).toBe(JOURNAL_POLL_MS);
    stop();
  });

  it('when the wake-ups cannot be listened for, the fast poll stands in and the failure is told', async () => {
    const closed = new MemorySignals();
    await closed.close();
    const views = fakeViews();
    const errors: unknown[] = [];
    const stop = await startJournalWakeUps({ storage: { engine: 'postgresql', signals: closed }, views, onError: (error) => errors.push(error) });
    expect(views.pollMs).toBe(JOURNAL_POLL_MS);
    expect(errors).toHaveLength(1);
    stop();
  });
});
