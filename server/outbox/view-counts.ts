import type { DerivedChange, DerivedTables } from '../../db/port/derived.ts';
import { messageDelivery } from '../metrics/figures.ts';
import type { MessageState } from './state.ts';
import { FIGURES_KEY, figuresOf, figuresRow, OUTBOX_FIGURES_VIEW, OUTBOX_WINDOWS_VIEW, windowOf, windowRow } from './table.ts';

// The outbox's counts, each a row of the derived tables moved by +new −old as messages change, so
// that nothing walks every message: waiting-item messages per person, channel and digest window
// (the planner asks the window it plans in; memory keeps the newest windows), and every message by
// channel and delivery state (the metrics).

/** Rows of a window read at once. */
const WINDOW_PAGE = 500;

/** A message's figures key: `channel delivery`. */
export function figuresKey(message: Pick<MessageState, 'channel' | 'delivered' | 'gaveUp' | 'attempts' | 'held'>): string {
  return `${message.channel} ${messageDelivery(message)}`;
}

export class OutboxCounts {
  readonly #tables: DerivedTables;
  /** Counts per window in memory, by `${person}|${channel}|${window}`. */
  readonly #windows = new Map<number, Map<string, number>>();
  /** Windows counted in memory before their rows were read: the table's counts are added at `settle`. */
  readonly #unread = new Set<number>();
  readonly #changedWindows = new Set<string>();
  #figures = new Map<string, number>();
  #figuresChanged = false;

  constructor(tables: DerivedTables) {
    this.#tables = tables;
  }

  /** Read the figures and the two newest windows from the tables (a start on kept tables). */
  async load(): Promise<void> {
    this.#figures = figuresOf(await this.#tables.get(OUTBOX_FIGURES_VIEW, FIGURES_KEY));
    const [newest] = await this.#tables.list(OUTBOX_WINDOWS_VIEW, { direction: 'desc', limit: 1 });
    if (newest === undefined) return;
    for (const window of [newest.order - 1, newest.order]) await this.window(window);
  }

  /** Make sure a window's counts are in memory (the planner asks it before planning in it). */
  async window(window: number): Promise<void> {
    if (this.#windows.has(window) && !this.#unread.has(window)) return;
    const counts = this.#windows.get(window) ?? new Map<string, number>();
    this.#windows.set(window, counts);
    let after = { order: window, key: '' };
    for (;;) {
      const rows = await this.#tables.list(OUTBOX_WINDOWS_VIEW, { direction: 'asc', after, limit: WINDOW_PAGE });
      const inWindow = rows.filter((row) => row.order === window);
      for (const row of inWindow) counts.set(row.key, (counts.get(row.key) ?? 0) + (typeof row.body.count === 'number' ? row.body.count : 0));
      if (inWindow.length < WINDOW_PAGE) break;
      const last = inWindow.at(-1)!;
      after = { order: last.order, key: last.key };
    }
    this.#unread.delete(window);
  }

  /** Read the rows of every window counted before it was read. */
  async settle(): Promise<void> {
    for (const window of [...this.#unread]) await this.window(window);
  }

  /** A new waiting-item message counted in its window. */
  countWindow(key: string): void {
    const window = windowOf(key);
    let counts = this.#windows.get(window);
    if (counts === undefined) {
      counts = new Map();
      this.#windows.set(window, counts);
      this.#unread.add(window);
    }
    counts.set(key, (counts.get(key) ?? 0) + 1);
    this.#changedWindows.add(key);
  }

  sentInWindow(person: string, channel: string, window: number): number {
    return this.#windows.get(window)?.get(`${person}|${channel}|${window}`) ?? 0;
  }

  /** A message moved from `old` (null: new) to `now` in the figures. */
  moveFigures(old: string | null, now: string): void {
    if (old === now) return;
    if (old !== null) this.#figures.set(old, (this.#figures.get(old) ?? 0) - 1);
    this.#figures.set(now, (this.#figures.get(now) ?? 0) + 1);
    this.#figuresChanged = true;
  }

  /** Messages by channel and delivery state, keyed `channel delivery` (none at 0). */
  figures(): Map<string, number> {
    return new Map([...this.#figures].filter(([, count]) => count !== 0));
  }

  changes(): DerivedChange[] {
    const changes: DerivedChange[] = [];
    for (const key of this.#changedWindows) changes.push({ view: OUTBOX_WINDOWS_VIEW, key, row: windowRow(key, this.#windows.get(windowOf(key))?.get(key) ?? 0) });
    if (this.#figuresChanged) changes.push({ view: OUTBOX_FIGURES_VIEW, key: FIGURES_KEY, row: figuresRow(this.#figures) });
    return changes;
  }

  written(): void {
    this.#changedWindows.clear();
    this.#figuresChanged = false;
  }

  /** Let go of every window older than the newest two but `asked` (no change of theirs unwritten). */
  evict(asked: number | null): void {
    const newest = Math.max(...this.#windows.keys());
    for (const window of this.#windows.keys()) {
      if (window >= newest - 1 || window === asked || this.#unread.has(window)) continue;
      if ([...this.#changedWindows].some((key) => windowOf(key) === window)) continue;
      this.#windows.delete(window);
    }
  }

  /** How many windows are counted in memory. */
  get heldWindows(): number {
    return this.#windows.size;
  }
}
