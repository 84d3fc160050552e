import type { DecisionTimes, Scoreboard } from '../../shared/api.ts';
import type { ChainFigures } from './chain-figures.ts';
import { addMoney, copyMoney } from './money.ts';

// The board summed from chains' figures: every figure zero to start with, each chain added in
// turn, the share and the waits' median, p90 and max figured at the end.

/** Python's round-half-even to 3 places, as the published share was computed. */
export function roundShare(value: number): number {
  const scaled = value * 1000;
  const floor = Math.floor(scaled);
  const diff = scaled - floor;
  const rounded = diff > 0.5 || (diff === 0.5 && floor % 2 === 1) ? floor + 1 : floor;
  return rounded / 1000;
}

/** The median, p90 (`waits[ceil(0.9 n) - 1]`) and max of sorted waits. */
export function decisionTimes(sortedWaitsMs: readonly number[]): DecisionTimes {
  const n = sortedWaitsMs.length;
  if (n === 0) return { n, median_ms: null, p90_ms: null, max_ms: null };
  const mid = Math.floor(n / 2);
  const median = n % 2 === 1 ? sortedWaitsMs[mid]! : (sortedWaitsMs[mid - 1]! + sortedWaitsMs[mid]!) / 2;
  return { n, median_ms: median, p90_ms: sortedWaitsMs[Math.ceil(0.9 * n) - 1]!, max_ms: sortedWaitsMs[n - 1]! };
}

/** The board of no chain: every figure zero, in the order the API and the CSV give them. */
export function emptyBoard(): Scoreboard {
  return {
    requests: 0,
    cleared_no_person: 0,
    cleared_verified: 0,
    no_person_share: 0,
    sent_after_person: 0,
    rejected: 0,
    closed_by_repair: 0,
    repairs_accepted: 0,
    open: 0,
    escalated: 0,
    escalated_by_reason: {},
    stale_approvals_caught: 0,
    crash_to_person: 0,
    repairs_suggested: 0,
    sla_breaches: 0,
    sla_breaches_by_group: {},
    confirmed_by_target: 0,
    unconfirmed_sent: 0,
    time_to_decision: decisionTimes([]),
    sla_breaches_missed_by_group: {},
    money: {},
    // Added after the others: the CSV writes figures in this order, and an earlier line never moves.
    approved_on_facts_now: 0,
  };
}

/** Counts by name in name order, so a board reads the same whatever order its chains were summed in. */
export function sortedCounts(counts: Readonly<Record<string, number>>): Record<string, number> {
  return Object.fromEntries(Object.keys(counts).sort().map((key) => [key, counts[key]!]));
}

/** The chains' figures summed one at a time (`add`), into the board (`board`). */
export class BoardSum {
  readonly #board = emptyBoard();
  readonly #waits: number[] = [];

  add(f: ChainFigures): void {
    const board = this.#board;
    if (f.root) board.requests += 1;
    if (f.cleared) board.cleared_no_person += 1;
    if (f.clearedVerified) board.cleared_verified += 1;
    if (f.sentAfterPerson) board.sent_after_person += 1;
    board.rejected += f.rejected;
    board.closed_by_repair += f.closedByRepair;
    board.repairs_accepted += f.repairsAccepted;
    board.approved_on_facts_now += f.approvedOnFactsNow;
    if (f.open) board.open += 1;
    if (f.escalated) board.escalated += 1;
    for (const reason of f.reasons) board.escalated_by_reason[reason] = (board.escalated_by_reason[reason] ?? 0) + 1;
    board.stale_approvals_caught += f.staleCaught;
    board.crash_to_person += f.crashToPerson;
    board.repairs_suggested += f.repairsSuggested;
    for (const [group, count] of Object.entries(f.breachesByGroup)) {
      board.sla_breaches += count;
      board.sla_breaches_by_group[group] = (board.sla_breaches_by_group[group] ?? 0) + count;
    }
    for (const [group, count] of Object.entries(f.breachesMissedByGroup)) {
      board.sla_breaches_missed_by_group[group] = (board.sla_breaches_missed_by_group[group] ?? 0) + count;
    }
    addMoney(board.money, f.currency, f.money);
    if (f.confirmed) board.confirmed_by_target += 1;
    else if (f.committed) board.unconfirmed_sent += 1;
    for (const wait of f.waitsMs) this.#waits.push(wait);
  }

  /** The board of the chains added so far. */
  board(): Scoreboard {
    const board = this.#board;
    return {
      ...board,
      no_person_share: board.requests === 0 ? 0 : roundShare(board.cleared_no_person / board.requests),
      escalated_by_reason: sortedCounts(board.escalated_by_reason),
      sla_breaches_by_group: sortedCounts(board.sla_breaches_by_group),
      time_to_decision: decisionTimes([...this.#waits].sort((a, b) => a - b)),
      sla_breaches_missed_by_group: sortedCounts(board.sla_breaches_missed_by_group),
      money: copyMoney(board.money),
    };
  }
}

/** Sum the chains' figures into the board. */
export function sumFigures(all: Iterable<ChainFigures>): Scoreboard {
  const sum = new BoardSum();
  for (const f of all) sum.add(f);
  return sum.board();
}
