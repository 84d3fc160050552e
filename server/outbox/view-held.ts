import type { DerivedRow, DerivedTables } from '../../db/port/derived.ts';
import type { ItemContext, MessageState } from './state.ts';
import { isOpenMessage, itemOf, lastSeqOf, messageOf, OUTBOX_ITEMS_VIEW, OUTBOX_MESSAGES_VIEW } from './table.ts';

/** Where a chain in memory sorts in its table, and the seq of its last entry folded. */
export interface Place {
  order: number;
  lastSeq: number;
}

/**
 * What the outbox holds in memory: items and messages with their places in the tables, the ids
 * of the messages about each item held (what the planner must find journaled), and which digest
 * carries each held message. `moved` collects what may leave memory at the next look.
 */
export class OutboxHeld {
  readonly items = new Map<string, ItemContext>();
  readonly messages = new Map<string, MessageState>();
  readonly itemPlace = new Map<string, Place>();
  readonly messagePlace = new Map<string, Place>();
  /** The ids of the messages about each item held, oldest first. */
  readonly about = new Map<string, string[]>();
  /** The ids of `about`, each with its item. */
  readonly #known = new Map<string, string>();
  /** Held message id → the digest that carries it, for held messages in memory. */
  readonly covered = new Map<string, string>();
  /** Chains folded (or let go of by what named them) since eviction last looked: `i:` items, `m:` messages. */
  readonly moved = new Set<string>();
  /** Messages noted or read since `readNamed`: what they name is read into memory then. */
  readonly fresh = new Set<string>();

  /** True when a message with this id is known journaled: held, or about an item held. */
  exists(id: string): boolean {
    return this.messages.has(id) || this.#known.has(id);
  }

  holdItem(row: DerivedRow, ids: string[]): void {
    this.items.set(row.key, itemOf(row));
    this.itemPlace.set(row.key, { order: row.order, lastSeq: lastSeqOf(row) });
    this.moved.add(`i:${row.key}`);
    this.setAbout(row.key, ids);
  }

  holdMessage(row: DerivedRow): void {
    this.messages.set(row.key, messageOf(row));
    this.messagePlace.set(row.key, { order: row.order, lastSeq: lastSeqOf(row) });
    this.moved.add(`m:${row.key}`);
  }

  setAbout(effectId: string, ids: string[]): void {
    this.about.set(effectId, ids);
    for (const id of ids) this.#known.set(id, effectId);
  }

  /** A message about `effectId` journaled: known, when its item is held. */
  addAbout(effectId: string, id: string): void {
    const ids = this.about.get(effectId);
    if (ids === undefined) return;
    ids.push(id);
    this.#known.set(id, effectId);
  }

  /** Held for a digest, and no digest carries it yet: open work, as a message still owed is. */
  isUncovered(message: MessageState): boolean {
    return message.held !== null && !this.covered.has(message.id);
  }

  /** Messages held for a digest that no digest carries yet. */
  uncovered(): MessageState[] {
    return [...this.messages.values()].filter((message) => this.isUncovered(message));
  }

  /** Messages still owed an attempt whose time has come (wall clock), oldest first, and failed ones never given up. */
  due(wallMs: number): MessageState[] {
    const due: MessageState[] = [];
    for (const state of this.messages.values()) {
      if (state.held !== null || state.delivered !== null || state.gaveUp !== null) continue;
      const ended = state.attempts > 0 && state.nextAtMs === null;
      if (ended || (state.nextAtMs !== null && state.nextAtMs <= wallMs)) due.push(state);
    }
    return due;
  }

  /** Messages decided but neither delivered nor given up (held ones left out: their digest carries them). */
  undelivered(): MessageState[] {
    return [...this.messages.values()].filter((s) => s.delivered === null && s.gaveUp === null && s.held === null);
  }

  /** What open messages and digests name (`i:` items, `m:` held messages): kept in memory while they are open. */
  namedByOpen(): Set<string> {
    const named = new Set<string>();
    for (const message of this.messages.values()) {
      if (!isOpenMessage(message) && !this.isUncovered(message)) continue;
      if (message.about !== null) named.add(`i:${message.about}`);
      for (const held of message.content.covers ?? []) {
        named.add(`m:${held}`);
        const about = this.messages.get(held)?.about;
        if (about !== undefined && about !== null) named.add(`i:${about}`);
      }
    }
    return named;
  }

  /** Read into memory the items the fresh messages are about, and the held messages fresh digests carry. */
  async readNamed(tables: DerivedTables, aboutIds: (effectId: string) => Promise<string[]>): Promise<void> {
    for (const id of [...this.fresh]) {
      const message = this.messages.get(id);
      this.fresh.delete(id);
      if (message === undefined) continue;
      for (const held of message.content.covers ?? []) {
        this.covered.set(held, id);
        const row = this.messages.has(held) ? null : await tables.get(OUTBOX_MESSAGES_VIEW, held);
        if (row === null) continue;
        this.holdMessage(row);
        this.fresh.add(held);
      }
      if (message.about !== null && !this.items.has(message.about)) {
        const row = await tables.get(OUTBOX_ITEMS_VIEW, message.about);
        if (row !== null) this.holdItem(row, await aboutIds(message.about));
      }
    }
  }

  dropItem(id: string): void {
    this.items.delete(id);
    this.itemPlace.delete(id);
    for (const known of this.about.get(id) ?? []) this.#known.delete(known);
    this.about.delete(id);
  }

  dropMessage(message: MessageState): void {
    this.messages.delete(message.id);
    this.messagePlace.delete(message.id);
    this.covered.delete(message.id);
    // What it named may leave now: look at it again.
    if (message.about !== null) this.moved.add(`i:${message.about}`);
    for (const held of message.content.covers ?? []) this.moved.add(`m:${held}`);
  }
}
