import type { NotificationRecord } from '../../shared/api.ts';
import type { Entry, MessageEntry } from '../../shared/entries.ts';
import { foldItem, foldMessage, type ItemContext, type MessageState, newItem, newMessage, notificationRecord, windowKey } from './state.ts';

export { DIGEST_WINDOW_MS, digestWindow, type ItemContext, type MessageState, readContent, WAITING_EVENTS } from './state.ts';

/**
 * The outbox's view of the journal, fed every entry by the views' follower: each item's context
 * (for wording messages and knowing what is owed), and every message chain with where it stands.
 * Items touched since the planner last looked are kept in `touched`, so a pass plans only those.
 */
export class OutboxProjection {
  readonly items = new Map<string, ItemContext>();
  readonly messages = new Map<string, MessageState>();
  /** Message ids by the item they are about. */
  readonly byItem = new Map<string, string[]>();
  /** Held message id → the digest that carries it. */
  readonly #covered = new Map<string, string>();
  /** Waiting-item messages per person, channel and digest window: `${person}|${channel}|${window}`. */
  readonly #perWindow = new Map<string, number>();
  /** Items with a new entry since `takeTouched`. */
  #touched = new Set<string>();

  note(entry: Entry): void {
    switch (entry.kind) {
      case 'MESSAGE':
        this.#message(entry);
        return;
      case 'ATTEMPT':
      case 'GAVE_UP': {
        const state = this.messages.get(entry.effect_id);
        if (state) foldMessage(state, entry);
        return;
      }
      default:
        this.#item(entry);
    }
  }

  /** The items touched since the last call, and forget them. */
  takeTouched(): string[] {
    const touched = [...this.#touched];
    this.#touched = new Set();
    return touched;
  }

  /** The messages about one item, oldest first. */
  messagesAbout(effectId: string): MessageState[] {
    return (this.byItem.get(effectId) ?? []).map((id) => this.messages.get(id)!).filter(Boolean);
  }

  /** Who was told about one item, over which channel, and whether it reached them: the item page's list, oldest first. */
  notificationsAbout(effectId: string): NotificationRecord[] {
    return this.messagesAbout(effectId).map((message) => notificationRecord(message, this.#carrierOf(message)));
  }

  /** How many waiting-item messages a person's channel was sent or held in a digest window. */
  sentInWindow(person: string, channel: string, window: number): number {
    return this.#perWindow.get(`${person}|${channel}|${window}`) ?? 0;
  }

  /** True when a message with this id is journaled. */
  exists(id: string): boolean {
    return this.messages.has(id);
  }

  /** Messages held for a digest that no digest carries yet. */
  held(): MessageState[] {
    return [...this.messages.values()].filter((s) => s.held !== null && !this.#covered.has(s.id));
  }


  /**
   * Messages still owed an attempt whose time has come (wall clock), oldest first, and messages
   * whose last attempt failed but whose GAVE_UP was never journaled (a crash between the two): the
   * worker gives those up.
   */
  due(wallMs: number): MessageState[] {
    const due: MessageState[] = [];
    for (const state of this.messages.values()) {
      if (state.held !== null || state.delivered !== null || state.gaveUp !== null) continue;
      const ended = state.attempts > 0 && state.nextAtMs === null;
      if (ended || (state.nextAtMs !== null && state.nextAtMs <= wallMs)) due.push(state);
    }
    return due;
  }

  /** Messages decided but neither delivered nor given up (held ones included: their digest carries them). */
  undelivered(): MessageState[] {
    return [...this.messages.values()].filter((s) => s.delivered === null && s.gaveUp === null && s.held === null);
  }

  /** The digest that carries a held message, once one is decided. */
  #carrierOf(message: MessageState): MessageState | null {
    const digest = message.held === null ? undefined : this.#covered.get(message.id);
    return digest === undefined ? null : (this.messages.get(digest) ?? null);
  }

  #message(entry: MessageEntry): void {
    const state = newMessage(entry);
    this.messages.set(state.id, state);
    for (const held of state.content.covers ?? []) this.#covered.set(held, state.id);
    const key = windowKey(state);
    if (key !== null) this.#perWindow.set(key, (this.#perWindow.get(key) ?? 0) + 1);
    if (entry.about !== null) {
      const list = this.byItem.get(entry.about) ?? [];
      list.push(state.id);
      this.byItem.set(entry.about, list);
    }
  }

  #item(entry: Entry): void {
    let item = this.items.get(entry.effect_id);
    if (!item) {
      item = newItem(entry.effect_id);
      this.items.set(entry.effect_id, item);
    }
    this.#touched.add(entry.effect_id);
    foldItem(item, entry);
  }
}
