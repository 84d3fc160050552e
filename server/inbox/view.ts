import type { DerivedChange, DerivedTables } from '../../db/port/derived.ts';
import type { HistoryItem, InboxItem } from '../../shared/api.ts';
import type { Entry } from '../../shared/entries.ts';
import { type ItemChange, InboxProjection } from './projection.ts';
import { openItem } from './rule-words-before.ts';
import { type ChainSummary, emptySummary, foldEntry } from './summary.ts';
import { closedByRepair, foldedByInbox, heldOfRow, INBOX_VIEW, inboxRow, isOpenSummary, waitsAfter } from './table.ts';
import { historyFromTable, rowsOf } from './history-read.ts';
import { type DemoTally, tallyDemoRequests } from '../demo/plan.ts';

export interface InboxViewOptions {
  inboxName: string;
  tables: DerivedTables;
  /** A chain as the journal holds it now, each entry with its seq (through the views' guard). */
  chain: (effectId: string) => Promise<{ seq: number; entry: Entry }[]>;
  /** Where the tables' cursor stands, as far as the views know: entries at or below it are in the tables. */
  tablesSeq: () => number;
  /** The last journal seq the views applied. */
  viewsSeq: () => number;
  /** Told of an item that changed when a chain not in memory was read back and folded on (the live feed). */
  onChange?: (change: ItemChange) => void;
  /**
   * Whether the repair that closed this chain needs no more work: its chain began (or it names no
   * child to make). A start holds the chains closed by a repair only while it does not; absent, all.
   */
  repairBegun?: (summary: ChainSummary) => Promise<boolean>;
}

/** Where a held chain stands in the journal. */
interface Seqs {
  headSeq: number;
  lastSeq: number;
}

/** Open rows read per list call at start. */
const OPEN_READ_ROWS = 1_000;

/**
 * The inbox read from its derived table, with only open work in memory. The projection below
 * holds the summaries of the chains that can still change (the queue, the sweeps' index, the
 * reconciler's unconfirmed sends and the figures read them there), loaded from the table's open
 * rows at start; the done and closed lists, an item's summary and every chain's existence are read
 * from the table. A chain leaves memory once it is finished for good and the table holds its last
 * entry; an entry for a chain not in memory reads its summary back from its row and folds on.
 */
export class InboxView {
  readonly #options: InboxViewOptions;
  readonly #projection: InboxProjection;
  readonly #seqs = new Map<string, Seqs>();
  /** Chains not in memory that moved: their entries, folded on their row at `settle`. */
  readonly #pending = new Map<string, { seq: number; entry: Entry }[]>();
  readonly #changed = new Set<string>();
  readonly #touched = new Set<string>();
  /** Chains closed by a repair whose repair's chain exists: they may leave memory. */
  readonly #repairSettled = new Set<string>();
  /** The tables' cursor when the open rows were loaded: every chain open there is in memory. */
  #loadedAt = 0;
  #loaded: Promise<void> | null = null;

  constructor(options: InboxViewOptions) {
    this.#options = options;
    this.#projection = new InboxProjection(options.inboxName);
  }

  get inboxName(): string {
    return this.#options.inboxName;
  }

  /** The summaries in memory: every open chain, and chains that just moved. */
  get chains(): ReadonlyMap<string, ChainSummary> {
    return this.#projection.chains;
  }

  get work() {
    return this.#projection.work;
  }

  get waitingTurn(): ReadonlySet<string> {
    return this.#projection.waitingTurn;
  }

  /** How many chains' summaries are in memory. */
  get heldChains(): number {
    return this.#projection.chains.size;
  }

  owned(summary: ChainSummary): boolean {
    return this.#projection.owned(summary);
  }

  /** Load the table's open rows, once, before any entry is noted: open work as the tables' cursor (`seq`) has it. */
  load(seq: number): Promise<void> {
    this.#loaded ??= this.#load(seq).catch((error: unknown) => {
      this.#loaded = null;
      throw error;
    });
    return this.#loaded;
  }

  async #load(at: number): Promise<void> {
    const found = [];
    for await (const row of rowsOf(this.#options.tables, { direction: 'asc', open: true }, OPEN_READ_ROWS)) {
      const held = heldOfRow(row);
      // Closed by a repair whose chain began: no work is left, and the table answers for it.
      if (closedByRepair(held.summary) && (await this.#options.repairBegun?.(held.summary)) === true) continue;
      found.push(held);
    }
    // In the order the chains began, as a replay would have met them.
    found.sort((a, b) => a.headSeq - b.headSeq);
    for (const held of found) {
      this.#projection.hold(held.summary, held.waitingTurn);
      this.#seqs.set(held.summary.effectId, { headSeq: held.headSeq, lastSeq: held.lastSeq });
    }
    this.#loadedAt = at;
  }

  /** Take an entry the inbox folds, with its seq, in journal order; the item's change when `build` and it is known now. */
  note(entry: Entry, seq: number, build: boolean): ItemChange | null {
    const id = entry.effect_id;
    const seqs = this.#seqs.get(id);
    if (seqs !== undefined) {
      // Read back from a row that already held it.
      if (seq <= seqs.lastSeq) return null;
      const change = this.#fold(entry, build);
      seqs.lastSeq = seq;
      this.#touched.add(id);
      if (seq > this.#options.tablesSeq()) this.#changed.add(id);
      return change;
    }
    const pending = this.#pending.get(id);
    if (pending !== undefined) {
      pending.push({ seq, entry });
      return null;
    }
    // Closed by the time the open rows were loaded: the table has it.
    if (seq <= this.#loadedAt) return null;
    // A chain moving again, or one another process put in the tables first: read back at `settle`.
    if (entry.prev !== null || seq <= this.#options.tablesSeq()) {
      this.#pending.set(id, [{ seq, entry }]);
      return null;
    }
    this.#seqs.set(id, { headSeq: seq, lastSeq: seq });
    const change = this.#fold(entry, build);
    this.#touched.add(id);
    this.#changed.add(id);
    return change;
  }

  /** Fold an entry into its held chain; the item's change only when asked to build it. */
  #fold(entry: Entry, build: boolean): ItemChange | null {
    if (build) return this.#projection.apply(entry);
    this.#projection.fold(entry);
    return null;
  }

  /** Fold every chain that moved while not in memory on its row (or on its chain, when it has none). Called between the follower's pages. */
  async settle(): Promise<void> {
    for (const [id, entries] of this.#pending) {
      const stored = await this.#options.tables.get(INBOX_VIEW, id);
      const held = stored === null ? null : heldOfRow(stored);
      const summary = held?.summary ?? emptySummary(id);
      let waiting = held?.waitingTurn ?? false;
      let lastSeq = held?.lastSeq ?? 0;
      let headSeq = held?.headSeq ?? 0;
      // No row: the chain's entries before these are read from the journal.
      const toFold = held !== null ? entries : [...(await this.#options.chain(id)).filter(({ seq, entry }) => seq < (entries[0]?.seq ?? 0) && foldedByInbox(entry)), ...entries];
      const before = openItem(summary);
      for (const { seq, entry } of toFold) {
        if (seq <= lastSeq) continue;
        if (headSeq === 0) headSeq = seq;
        waiting = waitsAfter(summary, entry);
        foldEntry(summary, entry);
        lastSeq = seq;
      }
      this.#projection.hold(summary, waiting);
      this.#seqs.set(id, { headSeq, lastSeq });
      this.#touched.add(id);
      if (lastSeq > this.#options.tablesSeq()) this.#changed.add(id);
      this.#pending.delete(id);
      const after = openItem(summary);
      if (before !== null || after !== null) this.#options.onChange?.({ effectId: id, before, after });
    }
  }

  /** The rows changed since the last batch the tables took, as they stand now. */
  changes(): DerivedChange[] {
    const changes: DerivedChange[] = [];
    for (const id of this.#changed) {
      const summary = this.#projection.chains.get(id);
      const seqs = this.#seqs.get(id);
      if (summary === undefined || seqs === undefined) continue;
      changes.push({ view: INBOX_VIEW, key: id, row: inboxRow({ summary, ...seqs, waitingTurn: this.#projection.waitingTurn.has(id) }) });
    }
    return changes;
  }

  written(): void {
    this.#changed.clear();
  }

  /** A chain closed by a repair whose repair's chain exists: it needs no more work, and may leave memory. */
  repairSettled(effectId: string): void {
    this.#projection.work.settleRepair(effectId);
    this.#repairSettled.add(effectId);
    this.#touched.add(effectId);
  }

  /** Let go of every chain finished for good whose last entry the tables hold (only chains moved since the last look). */
  evict(): void {
    const tablesSeq = this.#options.tablesSeq();
    for (const id of this.#touched) {
      const seqs = this.#seqs.get(id);
      const summary = this.#projection.chains.get(id);
      if (seqs === undefined || summary === undefined) {
        this.#touched.delete(id);
        continue;
      }
      if (seqs.lastSeq > tablesSeq || this.#changed.has(id)) continue;
      this.#touched.delete(id);
      const open = isOpenSummary({ summary, waitingTurn: this.#projection.waitingTurn.has(id) });
      if (open && !this.#repairSettled.has(id)) continue;
      this.#projection.release(id);
      this.#seqs.delete(id);
      this.#repairSettled.delete(id);
    }
  }

  /** The open escalations routed to any of these groups, in the queue order. */
  queue(groups: Pick<ReadonlySet<string>, 'has'>): InboxItem[] {
    return this.#projection.queue(groups);
  }

  /** Sent refunds Stripe has not confirmed as final yet: open work, all in memory. */
  unconfirmedSent(): string[] {
    return this.#projection.unconfirmedSent();
  }

  /** A chain's summary: from memory when held, else from its row; null for a chain the views have not seen. */
  async summary(effectId: string): Promise<ChainSummary | null> {
    const held = this.#projection.chains.get(effectId);
    if (held !== undefined) return held;
    const stored = await this.#options.tables.get(INBOX_VIEW, effectId);
    if (stored === null) return null;
    const read = heldOfRow(stored);
    // A chain another process began past what these views applied is not theirs to show yet.
    return read.headSeq > this.#options.viewsSeq() ? null : read.summary;
  }

  /** Whether the views have seen an entry of this chain. */
  async hasChain(effectId: string): Promise<boolean> {
    return (await this.summary(effectId)) !== null;
  }

  /** Finished or closed chains, newest first, as the in-memory projection lists them (`InboxProjection.history`). */
  history(kind: 'done' | 'closed', groups: Pick<ReadonlySet<string>, 'has'>, search = '', limit = 200): Promise<HistoryItem[]> {
    return historyFromTable(this.#options.tables, { inboxName: this.inboxName, viewsSeq: this.#options.viewsSeq() }, kind, groups, search, limit);
  }

  /**
   * Effect ids of the chains this inbox owns, in the order they began: every row of the table, for
   * checks over the whole inbox; the server itself never reads them all (its sweeps have the work index).
   */
  async ownedIds(): Promise<string[]> {
    const owned: { headSeq: number; id: string }[] = [];
    const viewsSeq = this.#options.viewsSeq();
    for await (const row of rowsOf(this.#options.tables, { direction: 'asc' })) {
      const { summary, headSeq } = heldOfRow(row);
      if (headSeq <= viewsSeq && summary.agent === this.inboxName) owned.push({ headSeq, id: summary.effectId });
    }
    return owned.sort((a, b) => a.headSeq - b.headSeq).map((o) => o.id);
  }

  /** Every chain's summary, in the order the chains began: each row is read (for checks and fixtures). */
  async everySummary(): Promise<ChainSummary[]> {
    const all: { headSeq: number; summary: ChainSummary }[] = [];
    const viewsSeq = this.#options.viewsSeq();
    for await (const row of rowsOf(this.#options.tables, { direction: 'asc' })) {
      const read = heldOfRow(row);
      if (read.headSeq <= viewsSeq) all.push({ headSeq: read.headSeq, summary: this.#projection.chains.get(read.summary.effectId) ?? read.summary });
    }
    return all.sort((a, b) => a.headSeq - b.headSeq).map((a) => a.summary);
  }

  /** The demo requests among every chain's request, read a page at a time. */
  async demoTally(): Promise<DemoTally> {
    const tally: DemoTally = { count: 0, lastNumber: 0 };
    for await (const row of rowsOf(this.#options.tables, { direction: 'asc' })) {
      const one = tallyDemoRequests([heldOfRow(row).summary.request]);
      tally.count += one.count;
      tally.lastNumber = Math.max(tally.lastNumber, one.lastNumber);
    }
    return tally;
  }
}
