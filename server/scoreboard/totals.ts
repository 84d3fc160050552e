import type { DerivedChange, DerivedRow, DerivedTables } from '../../db/port/derived.ts';
import { isJsonObject, type Json } from '../../shared/json.ts';
import { countsBody, damagedTable, storedCounts } from './stored.ts';
import { emptyBoard } from './board-sum.ts';
import type { ChainFigures, DecisionTimes, Scoreboard } from './figures.ts';
import { addMoney } from './money.ts';

// The whole board kept in derived tables, so it is read without reading every chain: one row of
// totals (every count, moved by +new −old with each chain's change in the same batch), and the
// waits counted by hour, minute, second and value (ordered by it), so a median or a p90 is a walk
// over the hours, then the minutes of one hour, the seconds of one minute and the values of one
// second, never over every wait.

/** The board's totals: one row. */
export const TOTALS_VIEW = 'scoreboard.totals';
const TOTALS_KEY = 'board';
/** How many decisions waited each value (ms). */
export const WAITS_VIEW = 'scoreboard.waits';

/**
 * The wait counts, coarsest first: by hour, by minute, by second (each row the count of the waits
 * in `[order × width, (order + 1) × width)` ms), then by value. Each width divides the one before.
 */
export const WAIT_LEVELS: readonly { view: string; width: number }[] = [
  { view: 'scoreboard.waits.h', width: 3_600_000 },
  { view: 'scoreboard.waits.m', width: 60_000 },
  { view: 'scoreboard.waits.s', width: 1_000 },
  { view: WAITS_VIEW, width: 1 },
];

/** Rows read per list call while walking the waits. */
const WAITS_READ_ROWS = 1_000;

/**
 * The board's counts (time_to_decision and the share are figured at each read), how many waits
 * there are, and what the charts read of the whole board beside it: the chains each group was
 * named on, and the trips to a person by reason and the group they went to first (keyed by
 * `tripKey`), so neither is read from every chain.
 */
export interface ScoreTotals {
  board: Scoreboard;
  waits: number;
  groups: Record<string, number>;
  trips: Record<string, number>;
}

export function emptyTotals(): ScoreTotals {
  return { board: emptyBoard(), waits: 0, groups: {}, trips: {} };
}

/** The key a trip is counted under in `ScoreTotals.trips`: its reason and the group it went to first. */
export function tripKey(reason: string, group: string): string {
  return JSON.stringify([reason, group]);
}

/** Each trip of a chain to a person, with the reason and the group it went to first (`unknown` when none was named). */
export function tripsOf(f: ChainFigures): { reason: string; group: string }[] {
  return f.reasons.map((reason, i) => ({ reason, group: f.reasonGroups[i] ?? 'unknown' }));
}

export function copyTotals(totals: ScoreTotals): ScoreTotals {
  return structuredClone(totals);
}

const damaged = damagedTable;

/** The totals the table holds (none yet: all zero). */
export async function readTotals(tables: Pick<DerivedTables, 'get'>): Promise<ScoreTotals> {
  const stored = await tables.get(TOTALS_VIEW, TOTALS_KEY);
  if (stored === null) return emptyTotals();
  const { board, waits, groups, trips } = stored.body;
  if (!isJsonObject(board) || typeof waits !== 'number') throw damaged('totals row is no totals');
  // Every figure in the board's own order: the table's body has its keys sorted.
  return { board: storedCounts(board, emptyBoard()), waits, groups: countsIn(groups, 'groups'), trips: countsIn(trips, 'trips') };
}

/** A count by name the totals row holds; anything else is a damaged table. */
function countsIn(body: Json | undefined, what: string): Record<string, number> {
  if (!isJsonObject(body)) throw damaged(`totals row holds no ${what}`);
  const counts: Record<string, number> = {};
  for (const [key, n] of Object.entries(body)) {
    if (typeof n !== 'number' || !Number.isSafeInteger(n) || n <= 0) throw damaged(`totals row's ${what} ${key} is no count`);
    counts[key] = n;
  }
  return counts;
}

/** The change that writes the totals. */
export function totalsChange(totals: ScoreTotals): DerivedChange {
  const body = { board: countsBody(totals.board), waits: totals.waits, groups: { ...totals.groups }, trips: { ...totals.trips } };
  return { view: TOTALS_VIEW, key: TOTALS_KEY, row: { key: TOTALS_KEY, order: 0, open: false, body } };
}

/** Add (sign 1) or take away (sign -1) one chain's figures to the running totals, and its waits to `waits` (value → count moved). */
export function moveTotals(totals: ScoreTotals, f: ChainFigures, sign: 1 | -1, waits?: Map<number, number>): void {
  moveBoard(totals.board, f, sign);
  totals.waits += sign * f.waitsMs.length;
  for (const group of new Set(f.groups)) bump(totals.groups, group, sign);
  for (const { reason, group } of tripsOf(f)) bump(totals.trips, tripKey(reason, group), sign);
  if (waits !== undefined) for (const wait of f.waitsMs) waits.set(wait, (waits.get(wait) ?? 0) + sign);
}

/** Add (sign 1) or take away (sign -1) one chain's contribution to a board's counts. */
export function moveBoard(t: Scoreboard, f: ChainFigures, sign: 1 | -1): void {
  const count = (flag: boolean) => (flag ? sign : 0);
  t.requests += count(f.root);
  t.cleared_no_person += count(f.cleared);
  t.cleared_verified += count(f.clearedVerified);
  t.sent_after_person += count(f.sentAfterPerson);
  t.rejected += sign * f.rejected;
  t.closed_by_repair += sign * f.closedByRepair;
  t.repairs_accepted += sign * f.repairsAccepted;
  t.approved_on_facts_now += sign * f.approvedOnFactsNow;
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
  for (const [group, n] of Object.entries(f.breachesMissedByGroup)) bump(t.sla_breaches_missed_by_group, group, sign * n);
  addMoney(t.money, f.currency, f.money, sign);
  t.confirmed_by_target += count(f.confirmed);
  t.unconfirmed_sent += count(f.committed && !f.confirmed);
}

function bump(counts: Record<string, number>, key: string, by: number): void {
  const next = (counts[key] ?? 0) + by;
  if (next === 0) delete counts[key];
  else counts[key] = next;
}

const countOf = (row: DerivedRow | null): number => {
  if (row === null) return 0;
  const n = row.body.n;
  if (typeof n !== 'number' || !Number.isSafeInteger(n) || n <= 0) throw damaged(`wait count ${row.key} is no count`);
  return n;
};

/** The changes that move the wait counts by `moved` (value → count moved), at every level, reading the counts they move from. */
export async function waitChanges(tables: Pick<DerivedTables, 'get'>, moved: ReadonlyMap<number, number>): Promise<DerivedChange[]> {
  const changes: DerivedChange[] = [];
  for (const { view, width } of WAIT_LEVELS) {
    const byOrder = new Map<number, number>();
    for (const [wait, by] of moved) byOrder.set(Math.floor(wait / width), (byOrder.get(Math.floor(wait / width)) ?? 0) + by);
    for (const [order, by] of byOrder) {
      if (by === 0) continue;
      const key = String(order);
      const n = countOf(await tables.get(view, key)) + by;
      if (n < 0) throw damaged(`wait count ${key} would fall below zero`);
      changes.push({ view, key, row: n === 0 ? null : { key, order, open: false, body: { n } } });
    }
  }
  return changes;
}

/** Rows of a view in ascending order, from `order` on (inclusive) when given, `limit` rows a read. */
async function* ascendingFrom(tables: Pick<DerivedTables, 'list'>, view: string, order: number | undefined, limit: number): AsyncGenerator<DerivedRow> {
  // A count's key is its order written out: starting after (order − 1, its key) reads from `order` on.
  let after = order === undefined ? undefined : { order: order - 1, key: String(order - 1) };
  for (;;) {
    const rows = await tables.list(view, { direction: 'asc', limit, ...(after === undefined ? {} : { after }) });
    yield* rows;
    const last = rows.at(-1);
    if (last === undefined || rows.length < limit) return;
    after = { order: last.order, key: last.key };
  }
}

/**
 * Find the waits at `ranks` (ascending) among the `count` waits counted at `level` from `from` on,
 * the first of them at rank `before`: a level's row holding a rank is walked at the next level,
 * down to the values. Pushes them to `found`.
 */
async function ranksWithin(tables: Pick<DerivedTables, 'list'>, level: number, from: number | undefined, count: number, before: number, ranks: readonly number[], found: number[]): Promise<void> {
  const { view, width } = WAIT_LEVELS[level]!;
  const finer = WAIT_LEVELS[level + 1];
  // Within one row of the level above, at most width-above / width rows.
  const limit = from === undefined ? WAITS_READ_ROWS : Math.min(WAITS_READ_ROWS, WAIT_LEVELS[level - 1]!.width / width);
  let seen = 0;
  for await (const row of ascendingFrom(tables, view, from, limit)) {
    const n = countOf(row);
    const start = before + seen;
    if (found.length < ranks.length && ranks[found.length]! < start + n) {
      if (finer === undefined) while (found.length < ranks.length && ranks[found.length]! < start + n) found.push(row.order);
      else await ranksWithin(tables, level + 1, (row.order * width) / finer.width, n, start, ranks, found);
    }
    seen += n;
    if (found.length === ranks.length || seen >= count) return;
  }
}

/** The waits at these ranks (0 the shortest; ascending, each below the count of waits). */
export async function waitsAtRanks(tables: Pick<DerivedTables, 'list'>, ranks: readonly number[]): Promise<number[]> {
  const found: number[] = [];
  await ranksWithin(tables, 0, undefined, Number.POSITIVE_INFINITY, 0, ranks, found);
  if (found.length < ranks.length) throw damaged(`waits hold fewer than ${(ranks.at(-1) ?? 0) + 1} counts`);
  return found;
}

/** The median, p90 (`waits[ceil(0.9 n) - 1]`) and max of the `n` waits the tables count, as `decisionTimes` gives them. */
export async function tableDecisionTimes(tables: Pick<DerivedTables, 'list'>, n: number): Promise<DecisionTimes> {
  if (n === 0) return { n, median_ms: null, p90_ms: null, max_ms: null };
  const mid = Math.floor(n / 2);
  const medianRanks = n % 2 === 1 ? [mid] : [mid - 1, mid];
  const p90Rank = Math.ceil(0.9 * n) - 1;
  const ranks = [...new Set([...medianRanks, p90Rank])].sort((a, b) => a - b);
  const values = await waitsAtRanks(tables, ranks);
  const at = (rank: number) => values[ranks.indexOf(rank)]!;
  const median = medianRanks.length === 1 ? at(mid) : (at(mid - 1) + at(mid)) / 2;
  const [last] = await tables.list(WAITS_VIEW, { direction: 'desc', limit: 1 });
  if (last === undefined) throw damaged('waits are counted but none is kept');
  return { n, median_ms: median, p90_ms: at(p90Rank), max_ms: last.order };
}
