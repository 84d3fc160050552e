import type { DerivedChange, DerivedRow, DerivedTables } from '../../db/port/derived.ts';
import { isJsonObject } from '../../shared/json.ts';
import { countsBody, damagedTable, storedCounts } from './stored.ts';
import { emptyBoard } from './board-sum.ts';
import type { ChainFigures, DecisionTimes, Scoreboard } from './figures.ts';
import { addMoney } from './money.ts';

// The whole board kept in derived tables, so it is read without reading every chain: one row of
// totals (every count, moved by +new −old with each chain's change in the same batch), and the
// waits as counts by value (`scoreboard.waits`, ordered by the value) under counts by minute
// (`scoreboard.waitbins`), so a median or a p90 is a walk over the minutes, then over the distinct
// values of one minute, never over every wait.

/** The board's totals: one row. */
export const TOTALS_VIEW = 'scoreboard.totals';
const TOTALS_KEY = 'board';
/** How many decisions waited each value (ms). */
export const WAITS_VIEW = 'scoreboard.waits';
/** How many decisions waited within each minute (`floor(ms / WAIT_BIN_MS)`). */
export const WAIT_BINS_VIEW = 'scoreboard.waitbins';
export const WAIT_BIN_MS = 60_000;

/** Rows read per list call while walking the waits. */
const WAITS_READ_ROWS = 1_000;

/** The board's counts (time_to_decision and the share are figured at each read) and how many waits there are. */
export interface ScoreTotals {
  board: Scoreboard;
  waits: number;
}

export function emptyTotals(): ScoreTotals {
  return { board: emptyBoard(), waits: 0 };
}

export function copyTotals(totals: ScoreTotals): ScoreTotals {
  return structuredClone(totals);
}

const damaged = damagedTable;

/** The totals the table holds (none yet: all zero). */
export async function readTotals(tables: Pick<DerivedTables, 'get'>): Promise<ScoreTotals> {
  const stored = await tables.get(TOTALS_VIEW, TOTALS_KEY);
  if (stored === null) return emptyTotals();
  const { board, waits } = stored.body;
  if (!isJsonObject(board) || typeof waits !== 'number') throw damaged('totals row is no totals');
  // Every figure in the board's own order: the table's body has its keys sorted.
  return { board: storedCounts(board, emptyBoard()), waits };
}

/** The change that writes the totals. */
export function totalsChange(totals: ScoreTotals): DerivedChange {
  const body = { board: countsBody(totals.board), waits: totals.waits };
  return { view: TOTALS_VIEW, key: TOTALS_KEY, row: { key: TOTALS_KEY, order: 0, open: false, body } };
}

/** Add (sign 1) or take away (sign -1) one chain's figures to the running totals, and its waits to `waits` (value → count moved). */
export function moveTotals(totals: ScoreTotals, f: ChainFigures, sign: 1 | -1, waits?: Map<number, number>): void {
  moveBoard(totals.board, f, sign);
  totals.waits += sign * f.waitsMs.length;
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

const binOf = (wait: number): number => Math.floor(wait / WAIT_BIN_MS);

/** The changes that move the wait counts by `moved` (value → count moved), reading the counts they move from. */
export async function waitChanges(tables: Pick<DerivedTables, 'get'>, moved: ReadonlyMap<number, number>): Promise<DerivedChange[]> {
  const bins = new Map<number, number>();
  const changes: DerivedChange[] = [];
  const counted = async (view: string, order: number, by: number): Promise<void> => {
    if (by === 0) return;
    const key = String(order);
    const n = countOf(await tables.get(view, key)) + by;
    if (n < 0) throw damaged(`wait count ${key} would fall below zero`);
    changes.push({ view, key, row: n === 0 ? null : { key, order, open: false, body: { n } } });
  };
  for (const [wait, by] of moved) {
    await counted(WAITS_VIEW, wait, by);
    bins.set(binOf(wait), (bins.get(binOf(wait)) ?? 0) + by);
  }
  for (const [bin, by] of bins) await counted(WAIT_BINS_VIEW, bin, by);
  return changes;
}

/** Rows of a view in ascending order, from `order` on (inclusive), a page at a time. */
async function* ascendingFrom(tables: Pick<DerivedTables, 'list'>, view: string, order?: number): AsyncGenerator<DerivedRow> {
  // A count's key is its order written out: starting after (order − 1, its key) reads from `order` on.
  let after = order === undefined ? undefined : { order: order - 1, key: String(order - 1) };
  for (;;) {
    const rows = await tables.list(view, { direction: 'asc', limit: WAITS_READ_ROWS, ...(after === undefined ? {} : { after }) });
    yield* rows;
    const last = rows.at(-1);
    if (last === undefined || rows.length < WAITS_READ_ROWS) return;
    after = { order: last.order, key: last.key };
  }
}

/**
 * The waits at these ranks (0 the shortest; ascending, each below the count of waits): the minutes
 * walked up to the last rank's, and within each minute holding a rank, its values.
 */
export async function waitsAtRanks(tables: Pick<DerivedTables, 'list'>, ranks: readonly number[]): Promise<number[]> {
  const found: number[] = [];
  let before = 0;
  for await (const bin of ascendingFrom(tables, WAIT_BINS_VIEW)) {
    const n = countOf(bin);
    if (found.length < ranks.length && ranks[found.length]! < before + n) {
      let within = before;
      for await (const value of ascendingFrom(tables, WAITS_VIEW, bin.order * WAIT_BIN_MS)) {
        within += countOf(value);
        while (found.length < ranks.length && ranks[found.length]! < within) found.push(value.order);
        if (found.length === ranks.length || within >= before + n) break;
      }
    }
    before += n;
    if (found.length === ranks.length) return found;
  }
  throw damaged(`waits hold fewer than ${(ranks.at(-1) ?? 0) + 1} counts`);
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
