import type { DerivedChange, DerivedRow, DerivedTables } from '../../db/port/derived.ts';
import type { NotificationRecord } from '../../shared/api.ts';
import { type ItemContext, type MessageState, notificationRecord } from './state.ts';
import { aboutEnd, itemOf, messageOf, OUTBOX_ABOUT_VIEW, OUTBOX_HELD_VIEW, OUTBOX_ITEMS_VIEW, OUTBOX_MESSAGES_VIEW } from './table.ts';
import type { OutboxHeld } from './view-held.ts';

// The outbox's history, read from its derived tables: a message, an item's messages and who was
// told (the item page), every message and item (the simulator's comparison). What memory holds is
// the newer: it is read there first.

/** Rows read at once. */
export const ROWS_PAGE = 500;

/**
 * Rows of the about index read first: an item has a few messages, and a page past them reads the
 * next items' rows, so a small page (doubled while every row read is the item's) reads past the
 * item's own no more than it has, or this many.
 */
const ABOUT_PAGE_FIRST = 4;

/** A view's rows in order (or the reverse), a page at a time: the open ones, or all when `open` is undefined. */
export async function* rowsOf(tables: DerivedTables, view: string, open: boolean | undefined, direction: 'asc' | 'desc' = 'asc'): AsyncGenerator<DerivedRow> {
  let after: { order: number; key: string } | undefined;
  for (;;) {
    const rows = await tables.list(view, { direction, limit: ROWS_PAGE, ...(open === undefined ? {} : { open }), ...(after === undefined ? {} : { after }) });
    yield* rows;
    if (rows.length < ROWS_PAGE) return;
    const last = rows.at(-1)!;
    after = { order: last.order, key: last.key };
  }
}

export class OutboxReads {
  readonly #tables: DerivedTables;
  readonly #held: OutboxHeld;
  /** Index rows not in the tables yet. */
  readonly #unwritten: () => Iterable<DerivedChange>;

  constructor(tables: DerivedTables, held: OutboxHeld, unwritten: () => Iterable<DerivedChange>) {
    this.#tables = tables;
    this.#held = held;
    this.#unwritten = unwritten;
  }

  /** One message, from memory or its row; null when none is journaled under this id. */
  async message(id: string): Promise<MessageState | null> {
    const held = this.#held.messages.get(id);
    if (held !== undefined) return held;
    const row = await this.#tables.get(OUTBOX_MESSAGES_VIEW, id);
    return row === null ? null : messageOf(row);
  }

  async allMessages(): Promise<MessageState[]> {
    const found: MessageState[] = [];
    for await (const row of rowsOf(this.#tables, OUTBOX_MESSAGES_VIEW, undefined)) found.push(this.#held.messages.get(row.key) ?? messageOf(row));
    return found;
  }

  async allItems(): Promise<ItemContext[]> {
    const found: ItemContext[] = [];
    for await (const row of rowsOf(this.#tables, OUTBOX_ITEMS_VIEW, undefined)) found.push(this.#held.items.get(row.key) ?? itemOf(row));
    return found;
  }

  /** The messages about one item, oldest first. */
  async messagesAbout(effectId: string): Promise<MessageState[]> {
    const ids = this.#held.about.get(effectId) ?? (await this.aboutIds(effectId));
    const found = await Promise.all(ids.map((id) => this.message(id)));
    return found.filter((message): message is MessageState => message !== null);
  }

  /** Who was told about one item, over which channel, and whether it reached them, oldest first. */
  async notificationsAbout(effectId: string): Promise<NotificationRecord[]> {
    const messages = await this.messagesAbout(effectId);
    return Promise.all(messages.map(async (message) => notificationRecord(message, await this.#carrierOf(message))));
  }

  /** The ids of an item's messages, oldest first: the tables' index, and what of it is not written yet. */
  async aboutIds(effectId: string): Promise<string[]> {
    const ids: string[] = [];
    const end = aboutEnd(effectId);
    let after = { order: 0, key: `${effectId}/` };
    for (let limit = ABOUT_PAGE_FIRST; ; limit = Math.min(2 * limit, ROWS_PAGE)) {
      const rows = await this.#tables.list(OUTBOX_ABOUT_VIEW, { direction: 'asc', after, limit });
      const mine = rows.filter((row) => row.order === 0 && row.key < end);
      for (const row of mine) if (typeof row.body.id === 'string') ids.push(row.body.id);
      if (mine.length < limit) break;
      after = { order: 0, key: mine.at(-1)!.key };
    }
    // What is not written yet may be in the tables already: another process wrote them past it.
    const seen = new Set(ids);
    for (const change of this.#unwritten()) {
      const id = change.view === OUTBOX_ABOUT_VIEW && change.key.startsWith(`${effectId}/`) ? change.row?.body.id : undefined;
      if (typeof id === 'string' && !seen.has(id)) {
        seen.add(id);
        ids.push(id);
      }
    }
    return ids;
  }

  /** The digest that carries a held message, once one is decided. */
  async #carrierOf(message: MessageState): Promise<MessageState | null> {
    if (message.held === null) return null;
    let digest = this.#held.covered.get(message.id) ?? null;
    if (digest === null) {
      const row = await this.#tables.get(OUTBOX_HELD_VIEW, message.id);
      digest = typeof row?.body.digest === 'string' ? row.body.digest : null;
    }
    return digest === null ? null : this.message(digest);
  }
}
