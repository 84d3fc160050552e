import type { DerivedChange, DerivedTables } from '../../db/port/derived.ts';
import type { Entry } from '../../shared/entries.ts';
import { roundShare, sortedCounts } from './board-sum.ts';
import { type AcceptedRepair, type BoardFilter, type ChainFigures, ChainTally, type DecisionTimes, repairKey, type Scoreboard } from './figures.ts';
import { copyMoney } from './money.ts';
import { effectiveFigures, REPAIRS_VIEW, type RepairRow, repairTableRow, SCORE_VIEW, type ScoreRow, scoreRowOf, scoreTableRow, storedRepair, storedScoreRow } from './table.ts';
import { chainsIn, tableChains, tableSlice, untimedChains } from './table-read.ts';
import { copyTotals, moveTotals, readTotals, type ScoreTotals, tableDecisionTimes, totalsChange, waitChanges } from './totals.ts';

export interface ScoreboardViewOptions {
  inboxName: string;
  tables: DerivedTables;
  /** A chain as the journal holds it now (through the views' guard). */
  entries: (effectId: string) => Promise<Entry[]>;
  /** Where the tables' cursor stands, as far as the views know: entries at or below it are in the tables. */
  tablesSeq: () => number;
}

/** Chains known to be no chain of the inbox (by their agent), held at most: beyond it they are forgotten and read again. */
const NOT_OWNED_HELD_MAX = 10_000;

/**
 * A chain folded in memory: its tally, the seq of its first and last entries folded, and its row
 * as the tables hold it (null: none; undefined: read it there, another process may have moved it).
 */
interface Held {
  tally: ChainTally;
  headSeq: number;
  lastSeq: number;
  written: ScoreRow | null | undefined;
}

/** What the next batch writes, and what memory holds once it is written. */
interface Prepared {
  changes: DerivedChange[];
  totals: ScoreTotals;
  rows: Map<string, ScoreRow>;
  wait: boolean;
}

/**
 * The scoreboard read from its derived tables, with only open work folded in memory. Every entry
 * is given in journal order (by the views' follower); the chains that can still move their
 * figures are tallied here, and at the end of each page their rows, the repairs they accepted, the
 * totals and the wait counts they moved go to the views' writer (`changes`) in one batch. A chain
 * leaves memory once it is settled and the tables hold its last entry; an entry for a chain not in
 * memory (a late confirmation) folds it again from the journal (`settle`). The board is read from
 * the totals (kept in memory as the tables hold them) and the wait counts; slices and the chains
 * behind the charts from the chains' rows, a page at a time.
 */
export class ScoreboardView {
  readonly #options: ScoreboardViewOptions;
  readonly #held = new Map<string, Held>();
  /** Chains not in memory that moved: folded again from the journal at `settle`, through the entry named. */
  readonly #refold = new Map<string, { hash: string; seq: number }>();
  /** Chains that are no chain of the inbox, with their agent: only the repairs they accept count. */
  readonly #notOwned = new Map<string, unknown>();
  /** Chains changed since the last batch the tables took. */
  readonly #changed = new Set<string>();
  /** Repairs accepted since the last batch, and children started, by repair key. */
  readonly #accepted = new Map<string, string>();
  readonly #children = new Map<string, string>();
  /** Chains folded since they were last looked at for eviction. */
  readonly #touched = new Set<string>();
  #totals: ScoreTotals | null = null;
  #prepared: Prepared | null = null;
  #times: DecisionTimes | null = null;

  constructor(options: ScoreboardViewOptions) {
    this.#options = options;
  }

  /** Nothing is read at start: a chain not in memory is folded again from the journal when it next moves, the totals when first figured. */
  async load(_seq: number): Promise<void> {}

  /** Take an appended entry with its journal seq, in journal order. */
  note(entry: Entry, seq: number): void {
    const id = entry.effect_id;
    const after = seq > this.#options.tablesSeq();
    const held = this.#held.get(id);
    if (held !== undefined) {
      this.#accept(held.tally.push(entry));
      held.lastSeq = seq;
      this.#touched.add(id);
      if (after) this.#changed.add(id);
      return;
    }
    const refold = this.#refold.get(id);
    if (refold !== undefined) {
      this.#refold.set(id, { hash: entry.hash, seq });
      return;
    }
    // The tables hold it already, and nothing in memory needs it.
    if (!after) return;
    if (this.#notOwned.has(id)) {
      if (entry.kind === 'DECIDED' && entry.decision === 'repair' && entry.repair !== null) this.#accept({ key: repairKey(this.#notOwned.get(id), entry.repair.request_id), by: entry.by });
      return;
    }
    if (entry.prev !== null) {
      this.#refold.set(id, { hash: entry.hash, seq });
      return;
    }
    this.#start(id, entry, seq, [entry]);
  }

  /** Hold a chain from its first entry, folding `entries`; one not the inbox's is remembered as such. */
  #start(id: string, first: Entry, seq: number, entries: readonly Entry[], written: ScoreRow | null = null, lastSeq = seq): void {
    const tally = new ChainTally(first, this.#options.inboxName);
    for (const entry of entries) this.#accept(tally.push(entry));
    if (!tally.owned) {
      this.#notOwned.set(id, tally.agent);
      return;
    }
    this.#held.set(id, { tally, headSeq: seq, lastSeq, written });
    if (tally.repairChildKey !== null) this.#children.set(tally.repairChildKey, id);
    this.#touched.add(id);
    this.#changed.add(id);
  }

  #accept(repair: AcceptedRepair | null): void {
    if (repair !== null) this.#accepted.set(repair.key, repair.by);
  }

  /**
   * Fold again from the journal every chain that moved while not in memory, then figure the batch
   * the tables take: called between the follower's pages, so no entry arrives meanwhile.
   */
  async settle(): Promise<void> {
    const tables = this.#options.tables;
    for (const [id, cut] of this.#refold) {
      const stored = await tables.get(SCORE_VIEW, id);
      const entries = await this.#options.entries(id);
      const end = entries.findIndex((entry) => entry.hash === cut.hash);
      const first = entries[0];
      if (first === undefined || end < 0) throw new Error(`the scoreboard cannot fold ${id} again: the journal's chain lacks entry ${cut.hash}`);
      // The first seq orders only a row whose request has no time: that row's order is it. (A chain
      // with no row, its first entry in the tables, is none of the inbox's: its seq is never used.)
      const headSeq = stored?.order ?? cut.seq;
      this.#start(id, first, headSeq, entries.slice(0, end + 1), stored === null ? null : storedScoreRow(stored), cut.seq);
      this.#refold.delete(id);
    }
    if (this.#notOwned.size > NOT_OWNED_HELD_MAX) this.#notOwned.clear();
    this.#prepared = await this.#prepare();
  }

  /** The batch: changed rows, the repairs, and the totals and wait counts moved by +new −old. */
  async #prepare(): Promise<Prepared> {
    const tables = this.#options.tables;
    // Another process moved the tables since this view last wrote them: what memory holds of them is read there again.
    if (((await tables.cursor())?.seq ?? 0) !== this.#options.tablesSeq()) this.#forgetWritten();
    this.#totals ??= await readTotals(tables);
    const rows = new Map<string, ScoreRow>();
    for (const id of this.#changed) {
      const held = this.#held.get(id);
      const row = held === undefined ? null : scoreRowOf(held.tally);
      if (row !== null) rows.set(id, row);
    }
    // Nothing moves: the totals stay as they are (most batches, which no chain of the board is in).
    if (rows.size === 0 && this.#accepted.size === 0) return { changes: [], totals: this.#totals, rows, wait: false };
    const totals = copyTotals(this.#totals);
    // The repairs the batch reads and moves: those accepted, and those of every child that moved.
    const before = new Map<string, RepairRow>();
    const repairOf = async (key: string): Promise<RepairRow> => {
      let repair = before.get(key);
      if (repair === undefined) {
        repair = storedRepair(await tables.get(REPAIRS_VIEW, key));
        before.set(key, repair);
      }
      return repair;
    };
    const after = new Map<string, RepairRow>();
    for (const [key, child] of this.#children) after.set(key, { ...(after.get(key) ?? (await repairOf(key))), child });
    for (const [key, by] of this.#accepted) after.set(key, { ...(after.get(key) ?? (await repairOf(key))), by });
    for (const row of rows.values()) if (row.repairKey !== null) await repairOf(row.repairKey);
    const byNow = (key: string | null) => (key === null ? null : (after.get(key) ?? before.get(key))?.by);
    const byThen = (key: string | null) => (key === null ? null : before.get(key)?.by);
    // Every chain whose figures move: those changed, and each child whose repairer changed.
    const moving = new Map<string, { old: ScoreRow | null; now: ScoreRow }>();
    for (const [id, now] of rows) {
      const written = this.#held.get(id)?.written;
      moving.set(id, { old: written === undefined ? await this.#storedRow(id) : written, now });
    }
    for (const [key, repair] of after) {
      const child = repair.child;
      if (child === null || moving.has(child) || byThen(key) === repair.by) continue;
      const stored = this.#held.get(child)?.written ?? (await this.#storedRow(child));
      if (stored !== null) moving.set(child, { old: stored, now: stored });
    }
    const waits = new Map<number, number>();
    for (const { old, now } of moving.values()) {
      if (old !== null) moveTotals(totals, effectiveFigures(old, byThen(old.repairKey)), -1, waits);
      moveTotals(totals, effectiveFigures(now, byNow(now.repairKey)), 1, waits);
    }
    for (const [wait, by] of waits) if (by === 0) waits.delete(wait);
    const changes: DerivedChange[] = [];
    for (const [id, row] of rows) {
      const held = this.#held.get(id)!;
      changes.push({ view: SCORE_VIEW, key: id, row: scoreTableRow(id, row, held.headSeq, !held.tally.settled) });
    }
    for (const [key, repair] of after) changes.push({ view: REPAIRS_VIEW, key, row: repairTableRow(key, repair) });
    changes.push(totalsChange(totals), ...(await waitChanges(tables, waits)));
    return { changes, totals, rows, wait: waits.size > 0 };
  }

  async #storedRow(id: string): Promise<ScoreRow | null> {
    const stored = await this.#options.tables.get(SCORE_VIEW, id);
    return stored === null ? null : storedScoreRow(stored);
  }

  /** The rows changed since the last batch the tables took, with the totals and waits they move. */
  changes(): DerivedChange[] {
    return this.#prepared?.changes ?? [];
  }

  /**
   * The tables took the changes: memory moves with them. When another process wrote past them
   * first (`ours` false), the totals and the held chains' rows are read from the tables again.
   */
  written(ours = true): void {
    const prepared = this.#prepared;
    if (!ours) this.#forgetWritten();
    else if (prepared !== null) {
      this.#totals = prepared.totals;
      for (const [id, row] of prepared.rows) {
        const held = this.#held.get(id);
        if (held !== undefined) held.written = row;
      }
      if (prepared.wait) this.#times = null;
    }
    this.#prepared = null;
    this.#changed.clear();
    this.#accepted.clear();
    this.#children.clear();
  }

  /** What memory holds of the tables (the totals, each held chain's row) is read from them again before the next batch. */
  #forgetWritten(): void {
    this.#totals = null;
    this.#times = null;
    for (const held of this.#held.values()) held.written = undefined;
  }

  /** Let go of every chain that is settled and whose last entry the tables hold (only those folded since the last look). */
  evict(): void {
    const tablesSeq = this.#options.tablesSeq();
    for (const id of this.#touched) {
      const held = this.#held.get(id);
      if (held !== undefined && (held.lastSeq > tablesSeq || this.#changed.has(id))) continue;
      this.#touched.delete(id);
      if (held?.tally.settled === true) this.#held.delete(id);
    }
  }

  /** How many chains are tallied in memory. */
  get heldChains(): number {
    return this.#held.size;
  }

  /** The whole board: the totals as the tables hold them, the waits' figures walked from their counts. */
  async board(): Promise<Scoreboard> {
    const tables = this.#options.tables;
    this.#totals ??= await readTotals(tables);
    const { board: totals, waits } = this.#totals;
    this.#times ??= await tableDecisionTimes(tables, waits);
    return {
      ...totals,
      escalated_by_reason: sortedCounts(totals.escalated_by_reason),
      sla_breaches_by_group: sortedCounts(totals.sla_breaches_by_group),
      no_person_share: totals.requests === 0 ? 0 : roundShare(totals.cleared_no_person / totals.requests),
      time_to_decision: { ...this.#times },
      sla_breaches_missed_by_group: sortedCounts(totals.sla_breaches_missed_by_group),
      money: copyMoney(totals.money),
    };
  }

  /** A slice of the board (a time range or a group), summed over the chains in it, read from the table; `also` is given each of them. */
  slice(filter: BoardFilter, also?: (f: ChainFigures) => void): Promise<Scoreboard> {
    return tableSlice(this.#options.tables, filter, also);
  }

  /** The figures of the chains requested in `[fromMs, toMs)`, newest first: only that range of the table is read. */
  chainsBetween(fromMs: number, toMs: number): AsyncIterable<ChainFigures> {
    return chainsIn(this.#options.tables, fromMs, toMs);
  }

  /** The figures of the chains whose request has no time. */
  untimedChains(): AsyncIterable<ChainFigures> {
    return untimedChains(this.#options.tables);
  }

  /** Of the whole board, from its totals: every group a request was routed to, and the trips by reason and group (by `tripKey`). */
  async wholeCounts(): Promise<{ groups: Readonly<Record<string, number>>; trips: Readonly<Record<string, number>> }> {
    this.#totals ??= await readTotals(this.#options.tables);
    return { groups: { ...this.#totals.groups }, trips: { ...this.#totals.trips } };
  }

  /** The figures of every chain, read from the table: every row (for checks; the charts read their period, `chainsBetween`). */
  chains(): Promise<ChainFigures[]> {
    return tableChains(this.#options.tables);
  }
}
