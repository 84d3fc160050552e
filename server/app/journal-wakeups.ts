import type { Storage } from '../../db/port/storage.ts';
import type { Views } from '../views/views.ts';

// How a server learns of entries other servers appended to the journal it shares. On PostgreSQL,
// each server tells the others after each write commits (a wake-up on the journal channel, with
// the newest seq), and each catches up when told, and again whenever its listening connection was
// made again (wake-ups told meanwhile were lost). A slow poll behind them finds what a lost wake-up
// missed (a server killed between its commit and its wake-up). On SQLite no signal crosses
// processes, so the views poll the file often.

/** How often the views look for entries other processes appended, where nothing tells them (SQLite). */
export const JOURNAL_POLL_MS = 250;
/** The poll behind the wake-ups (PostgreSQL): the longest a lost wake-up leaves an entry unseen. */
export const JOURNAL_POLL_WOKEN_MS = 5_000;

/** What the wake-ups need: the storage's signals and engine, and the views they catch up. */
export interface JournalWakeUpParts {
  storage: Pick<Storage, 'engine' | 'signals'>;
  views: Pick<Views, 'refresh' | 'onCaughtUpUntil' | 'startPolling' | 'stopPolling'>;
  /** Told when listening for the wake-ups could not start (the storage closing): the fast poll stands in. */
  onError?: (error: unknown) => void;
  /** Told each time the listening connection was made again (wake-ups may have been lost), before the views catch up. */
  onReconnect?: () => void;
}

/** The poll interval for an engine: slow where wake-ups tell of new entries, fast where they cannot. */
export function journalPollMs(engine: Storage['engine']): number {
  return engine === 'postgresql' ? JOURNAL_POLL_WOKEN_MS : JOURNAL_POLL_MS;
}

/**
 * Catch the views up on every wake-up past what they hold, and on every reconnect of the
 * listening connection, with the poll behind them; the answer stops all three.
 */
export async function startJournalWakeUps(parts: JournalWakeUpParts): Promise<() => void> {
  const { storage, views } = parts;
  let heldSeq = 0;
  const stopWatching = views.onCaughtUpUntil((seq) => {
    heldSeq = seq;
  });
  let stopHearing = () => {};
  let pollMs = journalPollMs(storage.engine);
  try {
    stopHearing = await storage.signals.subscribe('interlock_journal', (payload) => {
      const seq = Number(payload);
      // The views' own writes, and wake-ups already caught up with, cost nothing.
      if (Number.isSafeInteger(seq) && seq <= heldSeq) return;
      views.refresh();
    });
  } catch (error) {
    parts.onError?.(error);
    pollMs = JOURNAL_POLL_MS;
  }
  const stopReconnects = storage.signals.onReconnect(() => {
    parts.onReconnect?.();
    views.refresh();
  });
  views.startPolling(pollMs);
  return () => {
    views.stopPolling();
    stopReconnects();
    stopHearing();
    stopWatching();
  };
}
