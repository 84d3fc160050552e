import { StoreClosedError } from '../port/errors.ts';
import { type ListenState, refuseBadSignal, type SignalChannel, type SignalListener, SignalListeners, type Signals, tellEach } from '../port/signals.ts';

/**
 * Signals inside one process, for a storage in memory or on SQLite: every subscriber of the
 * instance hears what is published on it, on a later turn of the event loop (as a signal from
 * another server would come). Nothing ever drops, so the reconnect hooks are never called; another
 * process on the same SQLite file finds new entries by polling the journal.
 */
export class MemorySignals implements Signals {
  readonly #listeners = new SignalListeners();
  #closed = false;

  async publish(channel: SignalChannel, payload: string): Promise<void> {
    refuseBadSignal(channel, payload);
    if (this.#closed) throw new StoreClosedError('the storage is closed');
    const listeners = [...this.#listeners.of(channel)];
    // Those subscribed when it was told, and still subscribed when it arrives.
    setImmediate(() => {
      const now = this.#listeners.of(channel);
      if (!this.#closed) tellEach(listeners.filter((listener) => now.has(listener)), payload);
    });
  }

  async subscribe(channel: SignalChannel, listener: SignalListener): Promise<() => void> {
    refuseBadSignal(channel, '');
    if (this.#closed) throw new StoreClosedError('the storage is closed');
    return this.#listeners.add(channel, listener);
  }

  onReconnect(_hook: () => void): () => void {
    return () => {};
  }

  onListenState(_hook: (state: ListenState) => void): () => void {
    return () => {};
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#listeners.clear();
  }
}
