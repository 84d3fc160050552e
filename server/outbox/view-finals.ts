import type { DerivedRow, DerivedTables } from '../../db/port/derived.ts';
import { limits } from '../../shared/limits.ts';
import type { ItemContext } from './state.ts';
import { finalsRow, OUTBOX_FINALS_VIEW } from './table.ts';
import { rowsOf } from './view-reads.ts';

/**
 * The items made final that an agent's callback may still be owed for: those within the delivery
 * window (24 h) of the newest final news seen. A load, or a reload that gives an agent a callback
 * (`replan`), hands them to the planner once (`take`): a day of final items, not history.
 */
export class OutboxFinals {
  readonly #tables: DerivedTables;
  /** The wall-clock time of the newest final news of an item (made final, failed at Stripe) seen. */
  #newest = 0;
  /** The final items of the window are still to be handed to the planner. */
  #toPlan = false;

  constructor(tables: DerivedTables) {
    this.#tables = tables;
  }

  /** At a load: the newest final news the tables hold; the window's items are owed a look when there is any. */
  async load(): Promise<void> {
    const [newest] = await this.#tables.list(OUTBOX_FINALS_VIEW, { direction: 'desc', limit: 1 });
    this.#newest = Math.max(this.#newest, newest?.order ?? 0);
    this.#toPlan = newest !== undefined;
  }

  /** True while an item made final may still owe its agent a callback: within the delivery window of the newest final news. */
  mayOweCallback(item: ItemContext): boolean {
    const final = finalsRow(item);
    if (final === null) return false;
    this.#newest = Math.max(this.#newest, final.order);
    return final.order >= this.#newest - limits.outboxDeliveryWindowMs;
  }

  /** Hand the window's final items to the planner once more: an agent was given a callback. */
  replan(): void {
    this.#toPlan = true;
  }

  /**
   * The window's final items, once after a load or a `replan`: from the tables, and from `held`
   * (items in memory, newer than the tables' rows while their batch is not written). Read only
   * when `read` (an agent has a callback to be told by); still owed when the read fails.
   */
  async take(read: boolean, held: Iterable<ItemContext>): Promise<string[]> {
    if (!this.#toPlan) return [];
    if (!read) {
      this.#toPlan = false;
      return [];
    }
    const rows: DerivedRow[] = [];
    for (const item of held) {
      const row = finalsRow(item);
      if (row === null) continue;
      rows.push(row);
      this.#newest = Math.max(this.#newest, row.order);
    }
    const since = this.#newest - limits.outboxDeliveryWindowMs;
    const ids = new Set(rows.filter((row) => row.order >= since).map((row) => row.key));
    for await (const row of rowsOf(this.#tables, OUTBOX_FINALS_VIEW, undefined, 'desc')) {
      if (row.order < since) break;
      ids.add(row.key);
    }
    this.#toPlan = false;
    return [...ids];
  }
}
