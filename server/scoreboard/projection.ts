import type { Entry } from '../../shared/entries.ts';
import { decisionTimes, roundShare, sortedCounts, sumFigures } from './board-sum.ts';
import { type BoardFilter, type ChainFigures, ChainTally, inSlice, type Scoreboard } from './figures.ts';
import { copyMoney } from './money.ts';
import { moveBoard } from './totals.ts';

export type { BoardFilter } from './figures.ts';

/** The first index whose value is not below `value` in a sorted array. */
function lowerBound(values: readonly number[], value: number): number {
  let lo = 0;
  let hi = values.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (values[mid]! < value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Insert into a sorted array. */
function insertSorted(values: number[], value: number): void {
  values.splice(lowerBound(values, value), 0, value);
}

/** Remove one occurrence from a sorted array. */
function removeSorted(values: number[], value: number): void {
  const at = lowerBound(values, value);
  if (values[at] === value) values.splice(at, 1);
}

/** Waits added at once above which they are merged in one pass rather than inserted one by one. */
const WAITS_INSERTED_MAX = 64;

/** Merge `added` into sorted `values`, in place, from the back. */
function mergeSorted(values: number[], added: number[]): void {
  added.sort((a, b) => a - b);
  let i = values.length - 1;
  let j = added.length - 1;
  values.length += added.length;
  for (let k = values.length - 1; j >= 0; k--) values[k] = i >= 0 && values[i]! > added[j]! ? values[i--]! : added[j--]!;
}

/**
 * The scoreboard kept up to date as entries are appended. Every entry, from the journal's first
 * (the follower replays them all at start-up), goes into its chain's tally; the tally keeps the
 * chain's figures, not its entries, so the journal is never read again. A chain that moved is
 * taken out of the running totals when its entry arrives and put back when the board is read, so
 * a read costs what changed, not the whole journal.
 */
export class ScoreboardProjection {
  readonly #tallies = new Map<string, ChainTally>();
  readonly #repairers = new Map<string, string>();
  /** Repair children by their key in the repairer map, so a newly accepted repair re-figures its child. */
  readonly #children = new Map<string, string>();
  /** Chains whose figures are out of the totals until the next read. */
  readonly #dirty = new Set<string>();
  readonly #waits: number[] = [];
  #totals: Scoreboard = sumFigures([]);

  /** Built only from the entries it is given (`note`): it never reads the journal. */
  constructor(private readonly inboxName: string) {}

  /** Take an appended entry; every entry of the journal must be given, in order. */
  note(entry: Entry): void {
    const id = entry.effect_id;
    let tally = this.#tallies.get(id);
    if (tally === undefined) {
      // A chain first met in its middle would be figured wrongly: the feed must start at the journal's start.
      if (entry.prev !== null) throw new Error(`scoreboard: entry ${entry.hash} of ${id} arrived before the start of its chain`);
      tally = new ChainTally(entry, this.inboxName);
      this.#tallies.set(id, tally);
      if (tally.repairChildKey !== null) this.#children.set(tally.repairChildKey, id);
      this.#dirty.add(id);
    } else this.takeOut(id, tally);
    const repair = tally.push(entry);
    if (repair !== null && this.#repairers.get(repair.key) !== repair.by) {
      const child = this.#children.get(repair.key);
      const childTally = child === undefined ? undefined : this.#tallies.get(child);
      if (child !== undefined && childTally !== undefined) this.takeOut(child, childTally);
      this.#repairers.set(repair.key, repair.by);
    }
  }

  /** The whole board, up to date with every noted entry. */
  async board(): Promise<Scoreboard> {
    this.settle();
    const totals = this.#totals;
    return {
      ...totals,
      escalated_by_reason: sortedCounts(totals.escalated_by_reason),
      sla_breaches_by_group: sortedCounts(totals.sla_breaches_by_group),
      no_person_share: totals.requests === 0 ? 0 : roundShare(totals.cleared_no_person / totals.requests),
      time_to_decision: decisionTimes(this.#waits),
      sla_breaches_missed_by_group: sortedCounts(totals.sla_breaches_missed_by_group),
      money: copyMoney(totals.money),
    };
  }

  /** A slice of the board (a time range or a group), summed over the chains in it. */
  async slice(filter: BoardFilter): Promise<Scoreboard> {
    return sumFigures(this.allFigures().filter((f) => inSlice(f, filter)));
  }

  /** The figures of every chain, for charts over time. */
  async chains(): Promise<ChainFigures[]> {
    return this.allFigures();
  }

  private allFigures(): ChainFigures[] {
    const all: ChainFigures[] = [];
    for (const tally of this.#tallies.values()) {
      const f = tally.figures(this.#repairers);
      if (f !== null) all.push(f);
    }
    return all;
  }

  /** Take a chain's figures out of the totals before it changes (once until the next read). */
  private takeOut(id: string, tally: ChainTally): void {
    if (this.#dirty.has(id)) return;
    this.#dirty.add(id);
    const f = tally.figures(this.#repairers);
    if (f === null) return;
    this.move(f, -1);
    for (const wait of f.waitsMs) removeSorted(this.#waits, wait);
  }

  /** Put the chains that moved back into the totals. */
  private settle(): void {
    if (this.#dirty.size === 0) return;
    const added: number[] = [];
    for (const id of this.#dirty) {
      const f = this.#tallies.get(id)?.figures(this.#repairers);
      if (f === null || f === undefined) continue;
      this.move(f, 1);
      for (const wait of f.waitsMs) added.push(wait);
    }
    this.#dirty.clear();
    if (added.length > WAITS_INSERTED_MAX) mergeSorted(this.#waits, added);
    else for (const wait of added) insertSorted(this.#waits, wait);
  }

  /** Add (sign 1) or take away (sign -1) one chain's contribution to the running totals. */
  private move(f: ChainFigures, sign: 1 | -1): void {
    moveBoard(this.#totals, f, sign);
  }
}
