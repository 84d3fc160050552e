import type { Entry } from '../../shared/entries.ts';
import type { JournalStore } from '../gate/journal.ts';
import { type ChainFigures, chainFigures, collectRepairers, decisionTimes, roundShare, type Scoreboard, sumFigures } from './figures.ts';

/** A slice of the board: requests made in a time range (application clock), or routed to one group. */
export interface BoardFilter {
  fromMs?: number;
  toMs?: number;
  group?: string;
}

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

/**
 * The scoreboard kept up to date as entries are appended: each appended entry marks its chain;
 * reading the board re-figures only the marked chains (from the journal) and moves the running
 * totals by the difference, so a warm read costs what changed, not the whole journal.
 */
export class ScoreboardProjection {
  readonly #figures = new Map<string, ChainFigures>();
  readonly #repairers = new Map<string, string>();
  readonly #dirty = new Set<string>();
  readonly #waits: number[] = [];
  #totals: Scoreboard = sumFigures([]);

  constructor(
    private readonly journal: JournalStore,
    private readonly inboxName: string,
  ) {}

  /** Note an appended entry; nothing is computed until the board is read. */
  note(entry: Entry): void {
    this.#dirty.add(entry.effect_id);
  }

  /** The whole board, up to date with every noted entry. */
  async board(): Promise<Scoreboard> {
    await this.settle();
    const totals = this.#totals;
    return {
      ...totals,
      escalated_by_reason: { ...totals.escalated_by_reason },
      sla_breaches_by_group: { ...totals.sla_breaches_by_group },
      no_person_share: totals.requests === 0 ? 0 : roundShare(totals.cleared_no_person / totals.requests),
      time_to_decision: decisionTimes(this.#waits),
    };
  }

  /** A slice of the board (a time range or a group), summed over the chains in it. */
  async slice(filter: BoardFilter): Promise<Scoreboard> {
    await this.settle();
    const inRange = (f: ChainFigures) =>
      (filter.fromMs === undefined || (f.requestedAtMs !== null && f.requestedAtMs >= filter.fromMs)) &&
      (filter.toMs === undefined || (f.requestedAtMs !== null && f.requestedAtMs < filter.toMs)) &&
      (filter.group === undefined || f.groups.includes(filter.group));
    return sumFigures([...this.#figures.values()].filter(inRange));
  }

  /** The figures of every chain, for charts over time. */
  async chains(): Promise<ChainFigures[]> {
    await this.settle();
    return [...this.#figures.values()];
  }

  private async settle(): Promise<void> {
    if (this.#dirty.size === 0) return;
    const ids = [...this.#dirty];
    this.#dirty.clear();
    const chains = await Promise.all(ids.map((id) => this.journal.entries(id)));
    for (const chain of chains) collectRepairers(chain, this.#repairers);
    chains.forEach((chain, i) => {
      const id = ids[i]!;
      const before = this.#figures.get(id);
      const after = chainFigures(chain, this.inboxName, this.#repairers);
      if (before) this.move(before, -1);
      if (after) {
        this.#figures.set(id, after);
        this.move(after, 1);
      } else this.#figures.delete(id);
    });
  }

  /** Add (sign 1) or take away (sign -1) one chain's contribution to the running totals. */
  private move(f: ChainFigures, sign: 1 | -1): void {
    const t = this.#totals;
    const count = (flag: boolean) => (flag ? sign : 0);
    t.requests += count(f.root);
    t.cleared_no_person += count(f.cleared);
    t.cleared_verified += count(f.clearedVerified);
    t.sent_after_person += count(f.sentAfterPerson);
    t.rejected += sign * f.rejected;
    t.closed_by_repair += sign * f.closedByRepair;
    t.repairs_accepted += sign * f.repairsAccepted;
    t.open += count(f.open);
    t.escalated += count(f.escalated);
    for (const reason of f.reasons) bump(t.escalated_by_reason, reason, sign);
    t.stale_approvals_caught += sign * f.staleCaught;
    t.crash_to_person += sign * f.crashToPerson;
    t.repairs_suggested += sign * f.repairsSuggested;
    for (const [group, n] of Object.entries(f.breachesByGroup)) {
      t.sla_breaches += sign * n;
      bump(t.sla_breaches_by_group, group, sign * n);
    }
    t.confirmed_by_target += count(f.confirmed);
    t.unconfirmed_sent += count(f.committed && !f.confirmed);
    for (const wait of f.waitsMs) (sign === 1 ? insertSorted : removeSorted)(this.#waits, wait);
  }
}

function bump(counts: Record<string, number>, key: string, by: number): void {
  const next = (counts[key] ?? 0) + by;
  if (next === 0) delete counts[key];
  else counts[key] = next;
}
