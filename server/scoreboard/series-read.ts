import { type BoardFilter, type ChainFigures, inSlice, type Scoreboard } from './figures.ts';
import { PeriodSeries, tripsByCount } from './series.ts';
import { tripKey, tripsOf } from './totals.ts';
import type { ScoreboardView } from './view.ts';

// The series behind the scoreboard's charts, read from the scoreboard's tables: the period's
// buckets from the rows requested in it (a range of the table, which is ordered by request time),
// the board's figures from its totals or its own slice, never from every chain.

/** What `GET /api/scoreboard/series` answers. */
export interface SeriesAnswer {
  volume: ReturnType<PeriodSeries['volume']>;
  money: ReturnType<PeriodSeries['money']>;
  waits: ReturnType<PeriodSeries['waits']>;
  breaches_by_group: Scoreboard['sla_breaches_by_group'];
  breaches_missed_by_group: Scoreboard['sla_breaches_missed_by_group'];
  escalated_by_reason: Scoreboard['escalated_by_reason'];
  escalated_by_reason_and_group: { reason: string; group: string; count: number }[];
  groups: string[];
  from_ms: number;
  to_ms: number;
}

/** True for the whole board: no time range, no group, no reader's bound. */
function isWhole(filter: BoardFilter): boolean {
  return filter.fromMs === undefined && filter.toMs === undefined && filter.group === undefined && filter.within === undefined;
}

/**
 * The series of the period `[fromMs, toMs)` (its buckets: volume, money and waits) for the
 * filter's group and reader, and the board's own figures over the filter (its time range, which
 * may be none). Reads the period's rows, the rows of requests with no time (their waits count in
 * every period), and the board's slice when the filter is not the whole board; the whole board's
 * figures come from its totals.
 */
export async function readSeries(scoreboard: ScoreboardView, filter: BoardFilter, fromMs: number, toMs: number): Promise<SeriesAnswer> {
  // The period is the series' own (its buckets); the group and the reader's bound are the board's.
  const routed = { group: filter.group, within: filter.within };
  const period = new PeriodSeries(fromMs, toMs);
  for await (const f of scoreboard.chainsBetween(fromMs, toMs)) {
    // A chain with no time whose first seq falls in the range is counted below, with the others.
    if (f.requestedAtMs === null || !inSlice(f, routed)) continue;
    period.addVolume(f);
    period.addMoney(f);
    period.addWaits(f);
  }
  for await (const f of scoreboard.untimedChains()) if (inSlice(f, routed)) period.addWaits(f);
  const { board, trips } = await boardAndTrips(scoreboard, filter);
  return {
    volume: period.volume(),
    money: period.money(),
    waits: period.waits(),
    breaches_by_group: board.sla_breaches_by_group,
    breaches_missed_by_group: board.sla_breaches_missed_by_group,
    escalated_by_reason: board.escalated_by_reason,
    // The same trips by reason and the group they went to first, over the board's own slice.
    escalated_by_reason_and_group: tripsByCount(trips),
    // The groups the page may ask for: an approver's own, finance every group a request went to.
    groups: filter.within === undefined ? Object.keys((await scoreboard.wholeCounts()).groups).sort() : [...filter.within].sort(),
    from_ms: fromMs,
    to_ms: toMs,
  };
}

/** The board over the filter and its trips by reason and group (by `tripKey`): the whole board's from its totals, a slice's in one read of it. */
async function boardAndTrips(scoreboard: ScoreboardView, filter: BoardFilter): Promise<{ board: Scoreboard; trips: Record<string, number> }> {
  if (isWhole(filter)) return { board: await scoreboard.board(), trips: { ...(await scoreboard.wholeCounts()).trips } };
  const trips: Record<string, number> = {};
  const countTrips = (f: ChainFigures) => {
    for (const { reason, group } of tripsOf(f)) trips[tripKey(reason, group)] = (trips[tripKey(reason, group)] ?? 0) + 1;
  };
  return { board: await scoreboard.slice(filter, countTrips), trips };
}
