import type { CurrentFacts, InboxItem, LiveMessage, MovedUp } from '../../shared/api.ts';
import type { ItemChange } from '../inbox/projection.ts';

/** What the hub needs of a socket. */
export interface LiveSocket {
  send(data: string): void;
  close(code: number, reason: string): void;
  readonly readyState: number;
}

const OPEN = 1;

/** Sockets held at once: bounds memory if clients misbehave. */
const SOCKETS_MAX = 5_000;

/** The groups whose items a socket hears of: asked at each change, so a config read again applies at once. */
export interface Audience {
  has(group: string): boolean;
}

interface Subscriber {
  socket: LiveSocket;
  groups: Audience;
}

/**
 * Fans domain events out to approvers' websockets. Every change goes only to the sockets whose
 * person belongs to the group the item was in or is now in, so nobody learns of another group's
 * items; an item that left your groups arrives as `item: null`.
 */
export class LiveHub {
  readonly #subscribers = new Set<Subscriber>();

  constructor(private readonly nowMs: () => number) {}

  get size(): number {
    return this.#subscribers.size;
  }

  /** Add a socket and send it the current state first, so a reconnecting client is whole again. */
  join(socket: LiveSocket, groups: Audience, snapshot: InboxItem[]): () => void {
    if (this.#subscribers.size >= SOCKETS_MAX) throw new Error('too many live connections');
    const subscriber = { socket, groups };
    this.#subscribers.add(subscriber);
    this.send(subscriber, { type: 'snapshot', items: snapshot, now_ms: this.nowMs() });
    return () => this.#subscribers.delete(subscriber);
  }

  /** Whether anyone is connected to hear about changes. */
  get listening(): boolean {
    return this.#subscribers.size > 0;
  }

  /** Publish a change of one item to whoever may see it. */
  publishItem(change: ItemChange): void {
    // An item is a function of its latest escalation and the approvals given on it: the same hash
    // (or none on both sides) with the same approvers is no change. A first approval of two keeps
    // the escalation and is one.
    if (this.#subscribers.size === 0 || sameItem(change)) return;
    for (const subscriber of this.#subscribers) {
      const seesBefore = change.before !== null && subscriber.groups.has(change.before.group);
      const seesAfter = change.after !== null && subscriber.groups.has(change.after.group);
      if (!seesBefore && !seesAfter) continue;
      if (seesAfter) this.send(subscriber, { type: 'item', effect_id: change.effectId, item: change.after, now_ms: this.nowMs() });
      else {
        const movedUp = movedUpFrom(change);
        this.send(subscriber, { type: 'item', effect_id: change.effectId, item: null, now_ms: this.nowMs(), ...(movedUp === null ? {} : { moved_up: movedUp }) });
      }
    }
  }

  /** Publish an item's payment facts, read again (display only), to whoever may see the item in `group`. */
  publishFacts(effectId: string, group: string, current: CurrentFacts): void {
    for (const subscriber of this.#subscribers) {
      if (subscriber.groups.has(group)) this.send(subscriber, { type: 'facts', effect_id: effectId, current, now_ms: this.nowMs() });
    }
  }

  /** Tell everyone something global moved (the clock in test mode, the scoreboard). */
  broadcast(message: LiveMessage): void {
    for (const subscriber of this.#subscribers) this.send(subscriber, message);
  }

  /** Close every socket (the views became unavailable): pages reconnect and are told why. */
  closeAll(code: number, reason: string): void {
    for (const subscriber of this.#subscribers) subscriber.socket.close(code, reason);
    this.#subscribers.clear();
  }

  private send(subscriber: Subscriber, message: LiveMessage): void {
    if (subscriber.socket.readyState !== OPEN) {
      this.#subscribers.delete(subscriber);
      return;
    }
    subscriber.socket.send(JSON.stringify(message));
  }
}

/** True when a change leaves the item as the feed shows it: the same escalation, approved by the same people. */
function sameItem(change: ItemChange): boolean {
  if ((change.before?.escalation ?? null) !== (change.after?.escalation ?? null)) return false;
  const approvers = (item: InboxItem | null) => (item?.approvals?.given ?? []).map((approval) => approval.by).join(',');
  return approvers(change.before) === approvers(change.after);
}

/** What the group an item left is told when it left because their deadline passed, or null for any other change. */
export function movedUpFrom(change: ItemChange): MovedUp | null {
  const { before, after } = change;
  if (before === null || after === null || after.moved_from === null || after.moved_from.group !== before.group || after.group === before.group) return null;
  const currency = typeof after.facts.currency === 'string' ? after.facts.currency : null;
  return { request_id: after.request.id, amount: after.request.amount, currency, from_group: before.group, missed_due_ms: after.moved_from.due_ms, to_group: after.group };
}
