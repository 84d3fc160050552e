// Signals: short text payloads told on a named channel to every server on the storage that
// listens, as they happen; nothing is kept. A signal is a hint that something changed (the journal
// grew, someone opened an item), never the change itself: a server that missed one (its listening
// connection dropped) finds what it missed from the journal, told by the reconnect hook, and
// presence is re-announced. On PostgreSQL they travel by LISTEN/NOTIFY between servers; in memory
// and on SQLite they stay inside the process.

/** The channels Interlock signals on: the journal's wake-ups and presence. A closed list. */
export const SIGNAL_CHANNELS = ['interlock_journal', 'interlock_presence'] as const;
/** One channel. */
export type SignalChannel = (typeof SIGNAL_CHANNELS)[number];

/**
 * The longest payload a signal carries, in UTF-8 bytes: far under PostgreSQL's 8,000-byte limit on
 * NOTIFY, so a payload that grows (a long list of viewers) is refused here, by name, rather than
 * by the database in the middle of a server's work.
 */
export const SIGNAL_PAYLOAD_BYTES_MAX = 2_000;

/** A payload over SIGNAL_PAYLOAD_BYTES_MAX, or a channel outside SIGNAL_CHANNELS: nothing was told. */
export class SignalRefusedError extends RangeError {
  readonly code = 'signal_refused';
}

/** What a listener of a channel is given: the payload, as published. */
export type SignalListener = (payload: string) => void;

/**
 * The listening connection as its server tells it: it could not be opened (`listening: false`, the
 * first failed try of an outage, at the start or after a drop; told once however many tries fail),
 * or it was opened again after such an outage (`listening: true`, with how long it was out).
 */
export type ListenState = { listening: false; error: unknown } | { listening: true; outMs: number };

/**
 * Where signals are told and heard. Every listener of a channel hears each signal published on it
 * after its subscription took effect, including the publisher's own, at most once; a signal told
 * while the listening connection was down is lost, and the reconnect hooks say when that may have
 * happened.
 */
export interface Signals {
  /** Tell `payload` on `channel` to every listener; refused (SignalRefusedError) over the bound or off the list. */
  publish(channel: SignalChannel, payload: string): Promise<void>;
  /** Hear `channel` from when the promise resolves on; the answer stops it. */
  subscribe(channel: SignalChannel, listener: SignalListener): Promise<() => void>;
  /** Be told each time the listening connection was made again after it was lost: signals told meanwhile never came. The answer stops it. */
  onReconnect(hook: () => void): () => void;
  /**
   * Be told when the listening connection could not be opened, once per outage, and when it is open
   * again after one; a hook given during an outage is told of it at once. Where nothing drops (one
   * process), never. The answer stops it.
   */
  onListenState(hook: (state: ListenState) => void): () => void;
  /** Stop listening and publishing; closing twice closes once. */
  close(): Promise<void>;
}

/** Refuse a channel off the list or a payload over the bound, before anything is told. */
export function refuseBadSignal(channel: string, payload: string): void {
  if (!SIGNAL_CHANNELS.some((name) => name === channel)) throw new SignalRefusedError(`no signal channel is named ${JSON.stringify(channel)}: the channels are ${SIGNAL_CHANNELS.join(', ')}`);
  const bytes = Buffer.byteLength(payload, 'utf8');
  if (bytes > SIGNAL_PAYLOAD_BYTES_MAX) throw new SignalRefusedError(`a signal on ${channel} carries at most ${SIGNAL_PAYLOAD_BYTES_MAX} bytes; this one has ${bytes}`);
}

/** Call each of `listeners` with `payload`; one that throws does not keep the others from hearing it. */
export function tellEach<A extends unknown[]>(listeners: Iterable<(...args: A) => void>, ...args: A): void {
  for (const listener of [...listeners]) {
    try {
      listener(...args);
    } catch {
      // A listener's own failure is its own; the signal was told.
    }
  }
}

/**
 * The listeners of a store's signals, by channel: each subscription its own, even of one function
 * twice, and removed by the function `add` answers. Both stores keep theirs in one.
 */
export class SignalListeners {
  readonly #byChannel = new Map<string, Set<SignalListener>>();

  /** Add a subscription of `listener` to `channel`; the answer removes it. */
  add(channel: SignalChannel, listener: SignalListener): () => void {
    const own: SignalListener = (payload) => listener(payload);
    let set = this.#byChannel.get(channel);
    if (set === undefined) {
      set = new Set();
      this.#byChannel.set(channel, set);
    }
    set.add(own);
    return () => void set.delete(own);
  }

  /** The subscriptions of `channel` now (empty for a channel nobody subscribed to). */
  of(channel: string): ReadonlySet<SignalListener> {
    return this.#byChannel.get(channel) ?? new Set();
  }

  /** Remove every subscription. */
  clear(): void {
    this.#byChannel.clear();
  }
}
