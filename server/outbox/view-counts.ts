import type { DerivedChange, DerivedTables } from '../../db/port/derived.ts';
import { messageDelivery } from '../metrics/figures.ts';
import type { MessageState } from './state.ts';
import { FIGURES_KEY, figuresOf, figuresRow, OUTBOX_FIGURES_VIEW, OUTBOX_WINDOWS_VIEW } from './table.ts';

// The outbox's counts. Waiting-item messages per person, channel and digest window: a row per
// message in its window (outbox/table.ts), counted when the planner asks the window it plans in, so
// no count is kept between plans. Every message by channel and delivery state (the metrics): one
// row moved +new −old with each message, each move tagged with the seq of its entry, so that the row
// written is always the tables' row at their cursor with the moves past it, whichever process
// wrote the entries between.

/** Rows of a window read at once. */
const WINDOW_PAGE = 500;

/** A message's figures key: `channel delivery`. */
export function figuresKey(message: Pick<MessageState, 'channel' | 'delivered' | 'gaveUp' | 'attempts' | 'held'>): string {
  return `${message.channel} ${messageDelivery(message)}`;
}

/** One move of the figures: `key` by `by`, for the entry at `seq`. */
interface Move {
  seq: number;
  key: string;
  by: number;
}

export class OutboxCounts {
  readonly #tables: DerivedTables;
  /** The window the planner asked last, with its counts by `${person}|${channel}|${window}`. */
  #window: { window: number; counts: Map<string, number> } | null = null;
  /** Moves not yet written. */
  #moves: Move[] = [];
  /** The figures' row as it is owed in the next batch: set at `settle`, null when nothing moved. */
  #owed: Map<string, number> | null = null;

  constructor(tables: DerivedTables) {
    this.#tables = tables;
  }

  /** Count a window's waiting-item messages from the tables (the planner asks it before planning in it). */
  async window(window: number): Promise<void> {
    const counts = new Map<string, number>();
    let after = { order: window, key: '' };
    for (;;) {
      const rows = await this.#tables.list(OUTBOX_WINDOWS_VIEW, { direction: 'asc', after, limit: WINDOW_PAGE });
      const inWindow = rows.filter((row) => row.order === window);
      for (const { body } of inWindow) {
        const key = `${String(body.person)}|${String(body.channel)}|${window}`;
        counts.set(key, (counts.get(key) ?? 0) + 1);
      }
      if (inWindow.length < WINDOW_PAGE) break;
      const last = inWindow.at(-1)!;
      after = { order: last.order, key: last.key };
    }
    this.#window = { window, counts };
  }

  sentInWindow(person: string, channel: string, window: number): number {
    return this.#window?.window === window ? (this.#window.counts.get(`${person}|${channel}|${window}`) ?? 0) : 0;
  }

  /** A message moved from `old` (null: new) to `now` in the figures, by its entry at `seq`. */
  moveFigures(old: string | null, now: string, seq: number): void {
    if (old === now) return;
    if (old !== null) this.#moves.push({ seq, key: old, by: -1 });
    this.#moves.push({ seq, key: now, by: 1 });
  }

  /**
   * Read the figures' row and the cursor it stands at (the cursor read on both sides of it, so the
   * row is the cursor's), and owe the row with the moves past that cursor.
   */
  async settle(): Promise<void> {
    if (this.#moves.length === 0) return;
    for (;;) {
      const before = (await this.#tables.cursor())?.seq ?? 0;
      const row = await this.#tables.get(OUTBOX_FIGURES_VIEW, FIGURES_KEY);
      const after = (await this.#tables.cursor())?.seq ?? 0;
      if (before !== after) continue;
      const owed = figuresOf(row);
      for (const { seq, key, by } of this.#moves) if (seq > after) owed.set(key, (owed.get(key) ?? 0) + by);
      this.#owed = owed;
      return;
    }
  }

  /** Messages by channel and delivery state, keyed `channel delivery` (none at 0), as the tables hold them. */
  async figures(): Promise<Map<string, number>> {
    const figures = figuresOf(await this.#tables.get(OUTBOX_FIGURES_VIEW, FIGURES_KEY));
    return new Map([...figures].filter(([, count]) => count !== 0));
  }

  changes(): DerivedChange[] {
    return this.#owed === null ? [] : [{ view: OUTBOX_FIGURES_VIEW, key: FIGURES_KEY, row: figuresRow(this.#owed) }];
  }

  written(): void {
    this.#owed = null;
    this.#moves = [];
  }

  /** How many windows are counted in memory. */
  get heldWindows(): number {
    return this.#window === null ? 0 : 1;
  }
}
