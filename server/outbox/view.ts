import type { DerivedChange, DerivedTables } from '../../db/port/derived.ts';
import { type Entry, MESSAGE_KINDS, type MessageEntry } from '../../shared/entries.ts';
import { foldItem, foldMessage, type ItemContext, type MessageState, newItem, newMessage } from './state.ts';
import { finalsRow, indexChanges, isOpenItem, isOpenMessage, itemRow, messageRow, OUTBOX_FINALS_VIEW, OUTBOX_HELD_VIEW, OUTBOX_ITEMS_VIEW, OUTBOX_MESSAGES_VIEW } from './table.ts';
import { figuresKey, OutboxCounts } from './view-counts.ts';
import { OutboxFinals } from './view-finals.ts';
import { OutboxHeld, type Place } from './view-held.ts';
import { OutboxReads, rowsOf } from './view-reads.ts';

export interface OutboxViewOptions {
  tables: DerivedTables;
  /** Where the tables' cursor stands, as far as the views know: entries at or below it are in the tables. */
  tablesSeq: () => number;
}

const MESSAGE_KIND_SET: ReadonlySet<string> = new Set(MESSAGE_KINDS);

/** A chain that moved while not in memory: its entries since, folded on its row at `settle`. */
interface Late {
  message: boolean;
  entries: { entry: Entry; seq: number }[];
  /**
   * Its first entry here was already in the tables (another process wrote them past it): the
   * row is read for what it may owe, and a chain with no row owes nothing.
   */
  inTables?: boolean;
}

/**
 * The outbox as the views keep it: its rows in derived tables (outbox/table.ts), its open work in
 * memory. Items not yet final, messages still owed an attempt, messages held for a digest none
 * carries yet, and what those name (the item a message is about, the held messages a digest
 * carries) are held here; the rest leaves memory once the tables' cursor passed its last entry.
 * Open work is loaded from the tables at start; an entry for a chain not in memory folds that
 * chain again from the journal. History (an item's messages, the metrics' counts) is read from
 * the tables.
 */
export class OutboxView {
  readonly #options: OutboxViewOptions;
  readonly #counts: OutboxCounts;
  readonly #held = new OutboxHeld();
  /** The outbox's history, read from its tables (memory's where it holds the newer). */
  readonly history: OutboxReads;
  /** Items in memory: open, named by an open message, or read for the planner. */
  readonly items = this.#held.items;
  /** Messages in memory: still owed, held for a digest, or named by an open digest. */
  readonly messages = this.#held.messages;
  readonly #late = new Map<string, Late>();
  /** Rows changed since the last batch the tables took: `i:` items, `m:` messages. */
  readonly #changed = new Set<string>();
  /** Index rows (about, held) since the last batch the tables took. */
  readonly #indexChanges = new Map<string, DerivedChange>();
  /** Items with a new entry since `takeTouched`. */
  #touched = new Set<string>();
  /** The tables' cursor when open work was loaded: entries at or below it are in what was loaded. */
  #loadedAt = 0;
  /** Items made final whose agent's callback may still be owed. */
  readonly #finals: OutboxFinals;

  constructor(options: OutboxViewOptions) {
    this.#options = options;
    this.#counts = new OutboxCounts(options.tables);
    this.#finals = new OutboxFinals(options.tables);
    this.history = new OutboxReads(options.tables, this.#held, () => this.#indexChanges.values());
  }

  /** Read the open work from the tables at start, their cursor at `seq` (0: nothing to read, they are rebuilt). */
  async load(seq: number): Promise<void> {
    this.#loadedAt = seq;
    if (seq === 0) return;
    const { tables } = this.#options;
    for await (const row of rowsOf(tables, OUTBOX_ITEMS_VIEW, true)) {
      this.#held.holdItem(row, await this.history.aboutIds(row.key));
      this.#touched.add(row.key);
    }
    // Items made final whose agent's callback may still be owed are planned again, as a replay
    // did: read by the planner's first pass, and only when some agent has a callback.
    await this.#finals.load();
    for await (const row of rowsOf(tables, OUTBOX_MESSAGES_VIEW, true)) this.#held.holdMessage(row);
    // Held messages no digest carries yet: their own rows are closed (no attempt of their own is owed).
    for await (const { key } of rowsOf(tables, OUTBOX_HELD_VIEW, true)) {
      const row = await tables.get(OUTBOX_MESSAGES_VIEW, key);
      if (row !== null) this.#held.holdMessage(row);
    }
    for (const id of this.messages.keys()) this.#held.fresh.add(id);
    await this.#held.readNamed(this.#options.tables, (id) => this.history.aboutIds(id));
  }

  /** Take an appended entry with its journal seq, in journal order. */
  note(entry: Entry, seq: number): void {
    if (seq <= this.#loadedAt) return;
    const after = seq > this.#options.tablesSeq();
    const id = entry.effect_id;
    const message = MESSAGE_KIND_SET.has(entry.kind);
    if (!message) this.#touched.add(id);
    const item = message ? undefined : this.items.get(id);
    const state = message ? this.messages.get(id) : undefined;
    const place = item !== undefined ? this.#held.itemPlace.get(id) : state !== undefined ? this.#held.messagePlace.get(id) : undefined;
    // Read from a row another process wrote past this entry: the state holds it already.
    if (place !== undefined && seq <= place.lastSeq) return;
    if (item !== undefined) {
      foldItem(item, entry);
      this.#moved(`i:${id}`, this.#held.itemPlace.get(id), seq, after);
    } else if (state !== undefined) {
      const old = figuresKey(state);
      foldMessage(state, entry);
      this.#counts.moveFigures(old, figuresKey(state), seq);
      this.#moved(`m:${id}`, this.#held.messagePlace.get(id), seq, after);
    } else if (this.#late.has(id)) {
      this.#late.get(id)!.entries.push({ entry, seq });
    } else if (!after) {
      // The tables hold it already, written by another process past this page: its row is read at
      // `settle`, so what it owes (a message to send, one held for a digest) is held here too.
      this.#late.set(id, { message, entries: [{ entry, seq }], inTables: true });
    } else if (entry.kind === 'MESSAGE') {
      this.#message(entry, seq);
    } else if (entry.prev === null && !message) {
      const started = newItem(id);
      foldItem(started, entry);
      this.items.set(id, started);
      this.#held.itemPlace.set(id, { order: seq, lastSeq: seq });
      this.#held.setAbout(id, []);
      this.#moved(`i:${id}`, undefined, seq, after);
    } else {
      this.#late.set(id, { message, entries: [{ entry, seq }] });
    }
  }

  /**
   * Fold every chain that moved while not in memory on its row (whose body holds its whole
   * state), and read in what new messages name. Called between the follower's pages, so no entry
   * arrives meanwhile.
   */
  async settle(): Promise<void> {
    for (const [id, late] of this.#late) {
      if (late.message) await this.#lateMessage(id, late);
      else await this.#lateItem(id, late);
      this.#late.delete(id);
    }
    await this.#held.readNamed(this.#options.tables, (id) => this.history.aboutIds(id));
    await this.#counts.settle();
  }

  /** The rows changed since the last batch the tables took, as they stand now. */
  changes(): DerivedChange[] {
    const changes: DerivedChange[] = [];
    for (const changed of this.#changed) {
      const id = changed.slice(2);
      if (changed.startsWith('i:')) {
        const item = this.items.get(id);
        const place = this.#held.itemPlace.get(id);
        if (item === undefined || place === undefined) continue;
        changes.push({ view: OUTBOX_ITEMS_VIEW, key: id, row: itemRow(item, place.order, place.lastSeq) });
        const final = finalsRow(item);
        if (final !== null) changes.push({ view: OUTBOX_FINALS_VIEW, key: id, row: final });
      } else {
        const message = this.messages.get(id);
        const place = this.#held.messagePlace.get(id);
        if (message !== undefined && place !== undefined) changes.push({ view: OUTBOX_MESSAGES_VIEW, key: id, row: messageRow(message, place.order, place.lastSeq) });
      }
    }
    return [...changes, ...this.#indexChanges.values(), ...this.#counts.changes()];
  }

  /** The tables took the changes (or another process wrote the same entries): none is owed now. */
  written(): void {
    this.#changed.clear();
    this.#indexChanges.clear();
    this.#counts.written();
  }

  /**
   * Let go of what is closed, whose last entry the tables hold, and that nothing open names: only
   * what moved since the last look is looked at (what an open message or digest names is looked
   * at again when that one leaves). `replay`: the start's replay (or rebuild) lets go after each
   * page it wrote, with no planning pass between its pages.
   */
  evict(replay = false): void {
    const held = this.#held;
    if (held.moved.size === 0) return;
    const tablesSeq = this.#options.tablesSeq();
    const named = held.namedByOpen();
    for (const moved of [...held.moved]) {
      const id = moved.slice(2);
      const isItem = moved.startsWith('i:');
      const place = isItem ? held.itemPlace.get(id) : held.messagePlace.get(id);
      if (place !== undefined && (place.lastSeq > tablesSeq || this.#changed.has(moved) || this.#late.has(id))) continue;
      held.moved.delete(moved);
      if (place === undefined || named.has(moved)) continue;
      const item = isItem ? this.items.get(id) : undefined;
      const message = isItem ? undefined : this.messages.get(id);
      if (item !== undefined && !isOpenItem(item)) {
        held.dropItem(id);
        // A closed item owes nothing more but an agent's callback within its window. Let go of
        // in the start's replay (a rebuild), it leaves the touched items too, and the planner
        // reads the window's final items from the tables once, as after a load: an item that
        // looked recent on its own page is not held for the planner through all history.
        const mayOwe = this.#finals.mayOweCallback(item);
        if (replay || !mayOwe) this.#touched.delete(id);
        if (replay && mayOwe) this.#finals.replan();
      }
      if (message !== undefined && !isOpenMessage(message) && !held.isUncovered(message)) held.dropMessage(message);
    }
  }

  /** How many items, messages and digest windows are held in memory. */
  get inMemory(): { items: number; messages: number; windows: number } {
    return { items: this.items.size, messages: this.messages.size, windows: this.#counts.heldWindows };
  }

  /**
   * The items made final within the delivery window, once after a load or `replanFinals`: their
   * agents' callbacks may still be owed. Read only when `read` (an agent has a callback).
   */
  takeFinals(read: boolean): Promise<string[]> {
    return this.#finals.take(read, this.items.values());
  }

  /** Hand the final items of the delivery window to the planner once more: an agent was given a callback. */
  replanFinals(): void {
    this.#finals.replan();
  }

  /** The items touched since the last call, and forget them. */
  takeTouched(): string[] {
    const touched = [...this.#touched];
    this.#touched = new Set();
    return touched;
  }

  /** Items a planning pass took and did not plan (it failed): the next pass takes them again. */
  retouch(ids: Iterable<string>): void {
    for (const id of ids) this.#touched.add(id);
  }

  /** An item's context for the planner: from memory, or read from its row (held until the next eviction looks). */
  async item(effectId: string): Promise<ItemContext | null> {
    const held = this.items.get(effectId);
    if (held !== undefined) return held;
    const row = await this.#options.tables.get(OUTBOX_ITEMS_VIEW, effectId);
    if (row === null) return null;
    this.#held.holdItem(row, await this.history.aboutIds(effectId));
    return this.items.get(effectId) ?? null;
  }

  /** Read a digest window's counts before planning in it. */
  async prepareWindow(window: number): Promise<void> {
    await this.#counts.window(window);
  }

  /** True when a message with this id is journaled: asked of the messages about items in memory, and of digests. */
  exists(id: string): boolean {
    return this.#held.exists(id);
  }

  /** How many waiting-item messages a person's channel was sent or held in a digest window. */
  sentInWindow(person: string, channel: string, window: number): number {
    return this.#counts.sentInWindow(person, channel, window);
  }

  /** Messages held for a digest that no digest carries yet. */
  held(): MessageState[] {
    return this.#held.uncovered();
  }

  /** Messages still owed an attempt whose time has come (wall clock), oldest first, and failed ones never given up. */
  due(wallMs: number): MessageState[] {
    return this.#held.due(wallMs);
  }

  /** Messages decided but neither delivered nor given up (held ones left out: their digest carries them). */
  undelivered(): MessageState[] {
    return this.#held.undelivered();
  }

  /** Messages by channel and delivery state, keyed `channel delivery`: the metrics' figures, read from the tables. */
  figures(): Promise<Map<string, number>> {
    return this.#counts.figures();
  }

  #message(entry: MessageEntry, seq: number): void {
    const state = newMessage(entry);
    this.messages.set(state.id, state);
    this.#held.messagePlace.set(state.id, { order: seq, lastSeq: seq });
    this.#moved(`m:${state.id}`, undefined, seq, true);
    this.#held.fresh.add(state.id);
    this.#counts.moveFigures(null, figuresKey(state), seq);
    for (const change of indexChanges(state, seq)) this.#indexChanges.set(`${change.view} ${change.key}`, change);
    if (state.about !== null) this.#held.addAbout(state.about, state.id);
    for (const held of state.content.covers ?? []) {
      this.#held.covered.set(held, state.id);
      this.#held.moved.add(`m:${held}`);
    }
  }

  /** A chain folded at `seq`: it may leave memory at a later look, and its row is owed when the tables lack the entry. */
  #moved(moved: string, place: Place | undefined, seq: number, after: boolean): void {
    if (place !== undefined) place.lastSeq = seq;
    this.#held.moved.add(moved);
    if (after) this.#changed.add(moved);
  }

  /** An item not in memory that moved: its row, and the entries past what the row folded. */
  async #lateItem(id: string, late: Late): Promise<void> {
    const stored = await this.#options.tables.get(OUTBOX_ITEMS_VIEW, id);
    if (stored === null && late.inTables === true) return;
    if (stored === null) throw new Error(`the outbox cannot fold item ${id} again: its chain began before the tables' cursor, and they hold no row of it`);
    this.#held.holdItem(stored, await this.history.aboutIds(id));
    const item = this.items.get(id)!;
    const place = this.#held.itemPlace.get(id)!;
    for (const { entry, seq } of late.entries) {
      if (seq <= place.lastSeq) continue;
      foldItem(item, entry);
      this.#moved(`i:${id}`, place, seq, true);
    }
  }

  /** A message not in memory that moved: its row, and the entries past what the row folded. */
  async #lateMessage(id: string, late: Late): Promise<void> {
    const stored = await this.#options.tables.get(OUTBOX_MESSAGES_VIEW, id);
    if (stored === null && late.inTables === true) return;
    if (stored === null) throw new Error(`the outbox cannot fold message ${id} again: it was decided before the tables' cursor, and they hold no row of it`);
    this.#held.holdMessage(stored);
    this.#held.fresh.add(id);
    const state = this.messages.get(id)!;
    const place = this.#held.messagePlace.get(id)!;
    for (const { entry, seq } of late.entries) {
      if (seq <= place.lastSeq) continue;
      const old = figuresKey(state);
      foldMessage(state, entry);
      this.#counts.moveFigures(old, figuresKey(state), seq);
      this.#moved(`m:${id}`, place, seq, true);
    }
  }
}
