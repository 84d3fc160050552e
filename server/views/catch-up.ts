import type { Entry } from '../../shared/entries.ts';
import { JournalCorruptError } from '../journal/store.ts';
import { isBusy, type JournalUnavailableError } from './failures.ts';

/** How a catch-up is tried again while the database is busy. */
export interface BusyRetries {
  /** The wait before each retry; after the last one the failure counts. */
  delaysMs: readonly number[];
  sleep: (ms: number) => Promise<void>;
  /** Refuse at once when the views became unavailable meanwhile. */
  assertAvailable: () => void;
  /** A corrupt journal: the views become unavailable, and that is thrown. */
  fail: (corrupt: JournalCorruptError) => JournalUnavailableError;
}

export const sleepMs = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Run one catch-up (the tables opened, the follower caught up with the journal), again after each
 * wait while the database answers busy. A corrupt journal is never retried: it fails the views.
 */
export async function catchUpRetrying(step: () => Promise<void>, retries: BusyRetries): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      await step();
      return;
    } catch (error) {
      if (error instanceof JournalCorruptError) throw retries.fail(error);
      const delayMs = retries.delaysMs[attempt];
      if (!isBusy(error) || delayMs === undefined) throw error;
      await retries.sleep(delayMs);
      retries.assertAvailable();
    }
  }
}

/** Chains the table-backed views read again in the batch being written: each read once for them all, until cleared. */
export class BatchChainReads {
  readonly #reads = new Map<string, Promise<Entry[]>>();
  readonly #read: (effectId: string) => Promise<Entry[]>;

  constructor(read: (effectId: string) => Promise<Entry[]>) {
    this.#read = read;
  }

  /** A chain as the journal holds it now, read once in this batch. */
  read(effectId: string): Promise<Entry[]> {
    let read = this.#reads.get(effectId);
    if (read === undefined) {
      read = this.#read(effectId);
      this.#reads.set(effectId, read);
    }
    return read;
  }

  /** The batch is written: the next reads read again. */
  clear(): void {
    this.#reads.clear();
  }
}

/** A catch-up every so often, for entries other processes appended to the same journal: one timer at most, never keeping the process alive. */
export class Polling {
  #timer: NodeJS.Timeout | null = null;

  start(intervalMs: number, poll: () => void): void {
    this.stop();
    this.#timer = setInterval(poll, intervalMs);
    this.#timer.unref();
  }

  stop(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
  }
}
