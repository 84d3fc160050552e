import { createContext, useContext, useSyncExternalStore } from 'react';
import type { InboxItem, LiveClientMessage, LiveMessage, MovedUp, Viewer } from '../../shared/api.ts';
import { sortQueue } from '../../shared/queue-order.ts';
import { assertNever } from '../../shared/statuses.ts';
import { callApi, messageOf, type SessionLoss } from './api-client.ts';
import { rememberItems } from './currency.ts';

/** Where the live connection stands. */
export type LinkStatus = 'connecting' | 'live' | 'reconnecting';

export interface LiveState {
  status: LinkStatus;
  /** My open items, soonest due first; null until the first snapshot (or the fallback read) arrives. */
  items: InboxItem[] | null;
  /** Server application clock minus this browser's clock: SLA countdowns run on the server's time. */
  offsetMs: number;
  /** When the next reconnect attempt happens, while reconnecting. */
  retryAtMs: number | null;
  /** Why the inbox could not be read at all, when neither the feed nor the fallback read worked. */
  error: string | null;
  /** Who is looking at which item now, by effect id (presence messages; never journaled). */
  viewers: ReadonlyMap<string, Viewer[]>;
  /** The session is about to end: when (this browser's clock) and whether a call would keep it alive; null otherwise. */
  sessionEnding: SessionEnding | null;
}

/** A session the server warned is ending. */
export interface SessionEnding {
  atMs: number;
  renewable: boolean;
}

/** Reconnect backoff: doubling from the first delay up to the cap, with ±20% jitter so tabs spread out. */
const RETRY_FIRST_MS = 1_000;
const RETRY_MAX_MS = 15_000;

/** The close code the server uses for a missing or expired session on the live route. */
const CLOSE_UNAUTHORIZED = 4401;

/** The queue order, the same as the server's (shared/queue-order.ts). Sorts in place. */
export function sortItems(items: InboxItem[]): InboxItem[] {
  return sortQueue(items);
}

/** Told of each change to one of my items: null when it left my groups, with `movedUp` when it left because my group missed its deadline. */
type ItemListener = (effectId: string, item: InboxItem | null, movedUp?: MovedUp) => void;

/**
 * The approver's live inbox over `/api/live`: a snapshot first, then one message per item change.
 * A lost connection is retried with backoff; every reconnect starts from a fresh snapshot, so
 * nothing missed while away stays missed.
 */
export class LiveFeed {
  #state: LiveState = { status: 'connecting', items: null, offsetMs: 0, retryAtMs: null, error: null, viewers: new Map(), sessionEnding: null };
  /** The item this tab shows now, told to the server on every (re)connect. */
  #viewing: string | null = null;
  #socket: WebSocket | null = null;
  #failures = 0;
  #timer: ReturnType<typeof setTimeout> | null = null;
  #stopped = false;
  #snapshots = 0;
  readonly #listeners = new Set<() => void>();
  readonly #itemListeners = new Set<ItemListener>();

  constructor(private readonly onSessionLost: (code: SessionLoss) => void) {}

  subscribe = (listener: () => void): (() => void) => {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  };

  getState = (): LiveState => this.#state;

  /** Hear about every change to one of my items (null: it left my groups). */
  onItem(listener: ItemListener): () => void {
    this.#itemListeners.add(listener);
    return () => this.#itemListeners.delete(listener);
  }

  start(): void {
    this.#stopped = false;
    window.addEventListener('online', this.retryNow);
    this.#connect();
  }

  stop(): void {
    this.#stopped = true;
    window.removeEventListener('online', this.retryNow);
    if (this.#timer) clearTimeout(this.#timer);
    this.#socket?.close(1000, 'leaving');
    this.#socket = null;
  }

  /** Say which item this tab shows (null: none), now and after every reconnect, so others see who is looking. */
  setViewing(effectId: string | null): void {
    if (this.#viewing === effectId) return;
    this.#viewing = effectId;
    this.#sendViewing();
  }

  #sendViewing(): void {
    if (this.#socket?.readyState !== WebSocket.OPEN) return;
    const message: LiveClientMessage = { type: 'viewing', effect_id: this.#viewing };
    this.#socket.send(JSON.stringify(message));
  }

  /** A call kept the session alive (Stay signed in): the warning goes at once, before the server says so. */
  sessionKept(): void {
    this.#set({ sessionEnding: null });
  }

  /** Skip the wait and reconnect now (the banner's button, or the browser coming back online). */
  retryNow = (): void => {
    if (this.#stopped || this.#state.status !== 'reconnecting') return;
    if (this.#timer) clearTimeout(this.#timer);
    this.#connect();
  };

  #set(patch: Partial<LiveState>): void {
    this.#state = { ...this.#state, ...patch };
    for (const listener of this.#listeners) listener();
  }

  #connect(): void {
    this.#timer = null;
    const url = `${window.location.protocol === 'https:' ? 'wss' : 'ws'}://${window.location.host}/api/live`;
    const socket = new WebSocket(url);
    this.#socket = socket;
    socket.onopen = () => {
      // A new connection knows nothing of this tab: say again what it shows (only if it shows an item).
      if (this.#socket === socket && this.#viewing !== null) this.#sendViewing();
    };
    socket.onmessage = (event) => {
      if (this.#socket !== socket) return;
      try {
        this.#receive(JSON.parse(String(event.data)) as LiveMessage);
      } catch (error) {
        console.error('live: unreadable message', error);
      }
    };
    socket.onclose = (event) => {
      if (this.#socket !== socket || this.#stopped) return;
      this.#socket = null;
      if (event.code === CLOSE_UNAUTHORIZED) {
        this.#stopped = true;
        this.onSessionLost(event.reason === 'session_expired' ? 'session_expired' : 'unauthorized');
        return;
      }
      this.#scheduleRetry();
    };
  }

  #scheduleRetry(): void {
    const delayMs = Math.min(RETRY_MAX_MS, RETRY_FIRST_MS * 2 ** this.#failures) * (0.8 + Math.random() * 0.4);
    this.#failures += 1;
    this.#set({ status: 'reconnecting', retryAtMs: Date.now() + delayMs });
    this.#timer = setTimeout(() => this.#connect(), delayMs);
    if (this.#state.items === null) void this.#readOnce();
  }

  /** With no snapshot yet, read the inbox once over HTTP so the page is not empty while the feed retries. */
  async #readOnce(): Promise<void> {
    const seen = this.#snapshots;
    try {
      const answer = await callApi<{ items: InboxItem[]; now_ms: number }>('GET', '/api/inbox');
      if (this.#snapshots !== seen || this.#stopped) return;
      rememberItems(answer.items);
      this.#set({ items: sortItems(answer.items), offsetMs: answer.now_ms - Date.now(), error: null });
    } catch (error) {
      if (this.#snapshots === seen) this.#set({ error: messageOf(error) });
    }
  }

  #receive(message: LiveMessage): void {
    const offsetMs = message.now_ms - Date.now();
    switch (message.type) {
      case 'snapshot': {
        this.#snapshots += 1;
        this.#failures = 0;
        const before = this.#state.items;
        rememberItems(message.items);
        // Presence starts again with the connection: the server tells who is looking as it learns.
        this.#set({ status: 'live', items: sortItems([...message.items]), offsetMs, retryAtMs: null, error: null, viewers: new Map() });
        if (before) this.#announceDifferences(before, message.items);
        return;
      }
      case 'item': {
        const others = (this.#state.items ?? []).filter((i) => i.effect_id !== message.effect_id);
        if (message.item) rememberItems([message.item]);
        this.#set({ items: sortItems(message.item ? [...others, message.item] : others), offsetMs });
        for (const listener of this.#itemListeners) listener(message.effect_id, message.item, message.moved_up);
        return;
      }
      case 'clock':
      case 'scoreboard':
        this.#set({ offsetMs });
        return;
      case 'facts': {
        // The payment's facts were read again: they decorate the item, they never replace it.
        const items = (this.#state.items ?? []).map((i) => (i.effect_id === message.effect_id ? { ...i, current: message.current } : i));
        this.#set({ items, offsetMs });
        return;
      }
      case 'session':
        this.#set({ offsetMs, sessionEnding: message.warning ? { atMs: Date.now() + message.ends_in_ms, renewable: message.renewable } : null });
        return;
      case 'presence': {
        const viewers = new Map(this.#state.viewers);
        if (message.viewers.length === 0) viewers.delete(message.effect_id);
        else viewers.set(message.effect_id, message.viewers);
        this.#set({ viewers, offsetMs });
        return;
      }
      default:
        assertNever(message);
    }
  }

  /** After a reconnect, tell item listeners about whatever changed while the feed was away. */
  #announceDifferences(before: InboxItem[], after: InboxItem[]): void {
    const old = new Map(before.map((i) => [i.effect_id, i.escalation]));
    const now = new Map(after.map((i) => [i.effect_id, i]));
    for (const id of new Set([...old.keys(), ...now.keys()])) {
      const item = now.get(id) ?? null;
      if (old.get(id) === item?.escalation) continue;
      for (const listener of this.#itemListeners) listener(id, item);
    }
  }
}

export const LiveContext = createContext<LiveFeed | null>(null);

/** The live feed of the logged-in approver. */
export function useLiveFeed(): LiveFeed {
  const feed = useContext(LiveContext);
  if (!feed) throw new Error('useLiveFeed outside LiveContext');
  return feed;
}

/** The live state, re-rendering on every change. */
export function useLiveState(): LiveState {
  const feed = useLiveFeed();
  return useSyncExternalStore(feed.subscribe, feed.getState);
}

const NOT_SUBSCRIBED = () => () => {};

/**
 * The application clock minus this browser's clock, as the live feed last said (0 without a feed):
 * what puts a wall-clock time from the server on the application clock (app-time.ts).
 */
export function useClockOffsetMs(): number {
  const feed = useContext(LiveContext);
  return useSyncExternalStore(feed ? feed.subscribe : NOT_SUBSCRIBED, () => feed?.getState().offsetMs ?? 0);
}

/** The live feed, or null for people who have no inbox. */
export function useLiveFeedOrNull(): LiveFeed | null {
  return useContext(LiveContext);
}
