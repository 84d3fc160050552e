import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { MemoryJournal } from '../../db/journal-memory.ts';
import type { DerivedTables } from '../../db/port/derived.ts';
import type { Storage } from '../../db/port/storage.ts';
import { openStorage } from '../../db/sqlite-storage.ts';
import type { Entry } from '../../shared/entries.ts';
import type { MoneyPoint, VolumePoint } from '../../shared/api.ts';
import { type BoardFilter, type ChainFigures, inSlice } from '../../server/scoreboard/figures.ts';
import { readSeries } from '../../server/scoreboard/series-read.ts';
import { SCORE_VIEW } from '../../server/scoreboard/table.ts';
import type { ScoreboardView } from '../../server/scoreboard/view.ts';
import { Views } from '../../server/views/views.ts';
import { reseal } from '../support/entries.ts';
import { buildInboxWorld, HOUR_MS, type InboxWorld } from '../support/inbox-world.ts';
import { refundChain } from '../support/ledger-journal.ts';

// The series behind the scoreboard's charts, read from the scoreboard's table by the period asked
// (the table is ordered by request time), answer byte for byte what they answered when every
// chain was read, for every period and group the API takes, and read only the period's rows.

const dir = mkdtempSync(join(tmpdir(), 'interlock-series-read-'));
const opened: Storage[] = [];
afterAll(async () => {
  for (const storage of opened) await storage.close();
  rmSync(dir, { recursive: true, force: true });
});

const quiet = { fatal: () => {}, error: () => {} };
const DAY_MS = 86_400_000;

/** Derived tables that count the scoreboard's rows every list call hands back. */
function counting(tables: DerivedTables): { tables: DerivedTables; rowsRead: () => number; reset: () => void } {
  let read = 0;
  const wrapped = new Proxy(tables, {
    get(target, key) {
      const member = Reflect.get(target, key, target);
      if (key !== 'list') return typeof member === 'function' ? member.bind(target) : member;
      return async (...args: Parameters<DerivedTables['list']>) => {
        const rows = await target.list(...args);
        if (args[0] === SCORE_VIEW) read += rows.length;
        return rows;
      };
    },
  });
  return { tables: wrapped, rowsRead: () => read, reset: () => (read = 0) };
}

/** Requests made over three days of the world's clock, escalated to every group, decided after waits, some past their deadline. */
async function daysOfRequests(world: InboxWorld, count: number, prefix: string): Promise<void> {
  const requests = Array.from({ length: count }, (_, i) => world.request([20, 80, 250, 30, 45][i % 5]!, { id: `${prefix}${i}`, ...(i % 7 === 3 ? { flagged: true } : {}) }));
  for (const [i, r] of requests.entries()) {
    await world.inbox.submit(r);
    world.clock.nowMs += 20 * 60_000 + (i % 9) * 61_000;
  }
  for (const [i, r] of requests.entries()) {
    world.clock.nowMs += 3 * 60_000 + i * 1_013;
    if (i % 4 === 1) await world.inbox.approve(world.effectIdOf(r), 'ana');
    if (i % 4 === 2) await world.inbox.approve(world.effectIdOf(r), 'cy');
    if (i % 7 === 3) await world.inbox.reject(world.effectIdOf(r), 'rita');
    if (i % 40 === 10) {
      world.clock.nowMs += 5 * HOUR_MS;
      await world.inbox.tick();
    }
  }
}

/** Chains whose requests carry no time, as a journal written before they did holds them: escalated and decided, with waits. */
async function untimedChains(count: number): Promise<Entry[]> {
  const journal = new MemoryJournal({ wallClockMs: () => 1_700_000_000_000 });
  const world = buildInboxWorld({ journal });
  await daysOfRequests(world, count, 'old-');
  const byChain = new Map<string, Entry[]>();
  for (const { entry } of await journal.scan(0, 1_000_000)) byChain.set(entry.effect_id, [...(byChain.get(entry.effect_id) ?? []), entry]);
  return [...byChain.values()].flatMap((chain) => {
    const [first, ...rest] = chain;
    if (first?.kind !== 'PROPOSED') return chain;
    const { at_ms: _untimed, ...proposed } = first;
    return reseal([proposed as Entry, ...rest]);
  });
}

// The series as they were answered when every chain was read: the route's and series.ts's code as it stood.

function bucketMsOf(fromMs: number, toMs: number): number {
  const spanMs = Math.max(HOUR_MS, toMs - fromMs);
  return Math.ceil(spanMs / 48 / HOUR_MS) * HOUR_MS;
}

function moneySeriesOfEvery(chains: readonly ChainFigures[], fromMs: number, toMs: number): Record<string, MoneyPoint[]> {
  const bucketMs = bucketMsOf(fromMs, toMs);
  const byCurrency: Record<string, MoneyPoint[]> = {};
  for (const f of chains) {
    if (f.money.refunded_minor === 0 || f.requestedAtMs === null || f.requestedAtMs < fromMs || f.requestedAtMs >= toMs) continue;
    let points = byCurrency[f.currency];
    if (points === undefined) {
      points = [];
      for (let start = fromMs; start < toMs; start += bucketMs) points.push({ start_ms: start, no_person_minor: 0, after_person_minor: 0 });
      byCurrency[f.currency] = points;
    }
    const point = points[Math.floor((f.requestedAtMs - fromMs) / bucketMs)];
    if (!point) continue;
    point.no_person_minor += f.money.refunded_no_person_minor;
    point.after_person_minor += f.money.refunded_after_person_minor;
  }
  return Object.fromEntries(Object.keys(byCurrency).sort().map((currency) => [currency, byCurrency[currency]!]));
}

function volumeSeriesOfEvery(chains: readonly ChainFigures[], fromMs: number, toMs: number): VolumePoint[] {
  const bucketMs = bucketMsOf(fromMs, toMs);
  const points: VolumePoint[] = [];
  for (let start = fromMs; start < toMs; start += bucketMs) points.push({ start_ms: start, requests: 0, cleared_no_person: 0 });
  for (const f of chains) {
    if (!f.root || f.requestedAtMs === null || f.requestedAtMs < fromMs || f.requestedAtMs >= toMs) continue;
    const point = points[Math.floor((f.requestedAtMs - fromMs) / bucketMs)];
    if (!point) continue;
    point.requests += 1;
    if (f.cleared) point.cleared_no_person += 1;
  }
  return points;
}

function tripsOfEvery(chains: readonly ChainFigures[]): { reason: string; group: string; count: number }[] {
  const counts = new Map<string, { reason: string; group: string; count: number }>();
  for (const f of chains) {
    f.reasons.forEach((reason, i) => {
      const group = f.reasonGroups[i] ?? 'unknown';
      const key = JSON.stringify([reason, group]);
      const row = counts.get(key) ?? { reason, group, count: 0 };
      row.count += 1;
      counts.set(key, row);
    });
  }
  return [...counts.values()].sort((a, b) => b.count - a.count || a.reason.localeCompare(b.reason) || a.group.localeCompare(b.group));
}

const WAIT_EDGES_MIN = [5, 15, 30, 60, 120, 240, 480, 1440] as const;

function waitHistogramOfEvery(chains: readonly ChainFigures[]): { label: string; count: number }[] {
  const bins = [...WAIT_EDGES_MIN.map((edge) => ({ label: `≤ ${edge >= 60 ? `${edge / 60} h` : `${edge} min`}`, count: 0 })), { label: '> 1 day', count: 0 }];
  for (const f of chains) {
    for (const wait of f.waitsMs) {
      const index = WAIT_EDGES_MIN.findIndex((edge) => wait <= edge * 60_000);
      bins[index === -1 ? bins.length - 1 : index]!.count += 1;
    }
  }
  return bins;
}

/** `all`: every chain's figures, as `scoreboard.chains()` read them (once, for every answer compared). */
async function seriesOfEvery(scoreboard: ScoreboardView, all: readonly ChainFigures[], filter: BoardFilter, fromMs: number, toMs: number) {
  const whole = filter.fromMs === undefined && filter.toMs === undefined && filter.group === undefined && filter.within === undefined;
  const chains = all.filter((f) => inSlice(f, { group: filter.group, within: filter.within }));
  const current = whole ? await scoreboard.board() : await scoreboard.slice(filter);
  return {
    volume: volumeSeriesOfEvery(chains, fromMs, toMs),
    money: moneySeriesOfEvery(chains, fromMs, toMs),
    waits: waitHistogramOfEvery(chains.filter((f) => f.requestedAtMs === null || (f.requestedAtMs >= fromMs && f.requestedAtMs < toMs))),
    breaches_by_group: current.sla_breaches_by_group,
    breaches_missed_by_group: current.sla_breaches_missed_by_group,
    escalated_by_reason: current.escalated_by_reason,
    escalated_by_reason_and_group: tripsOfEvery(all.filter((f) => inSlice(f, filter))),
    groups: filter.within === undefined ? [...new Set(all.flatMap((f) => f.groups))].sort() : [...filter.within].sort(),
    from_ms: fromMs,
    to_ms: toMs,
  };
}

/** The period the route reads for a query: to now, from a day before the end, unless asked. */
function periodOf(filter: BoardFilter, nowMs: number): { fromMs: number; toMs: number } {
  const toMs = filter.toMs ?? nowMs;
  return { fromMs: filter.fromMs ?? toMs - DAY_MS, toMs };
}

async function viewsOn(file: string) {
  const storage = await openStorage({ file });
  opened.push(storage);
  const count = counting(storage.derived);
  const journal = storage.journal({ wallClockMs: () => 1_700_000_000_000 });
  const views = new Views({ journal, inboxName: 'inbox', nowMs: () => 0, log: quiet, derived: count.tables });
  expect(await views.replayAtStart()).toBeNull();
  return { views, storage, journal, count };
}

describe('the scoreboard series read by period', () => {
  it('answer every period and group as reading every chain did, reading only the period’s rows', { timeout: 60_000 }, async () => {
    const file = join(dir, 'series.sqlite');
    const first = await viewsOn(file);
    const world = buildInboxWorld({ journal: first.journal });
    await daysOfRequests(world, 48, 'r');
    const worldEndMs = world.clock.nowMs;
    await first.journal.appendSealed([...Array.from({ length: 400 }, (_, i) => refundChain(i + 1, i % 3 === 0 ? ['succeeded'] : [])).flat(), ...(await untimedChains(8))]);
    await first.views.current();

    // Every answer from a server started again on the file: its totals read back from the tables.
    const { views, count } = await viewsOn(file);
    const { scoreboard } = await views.current();
    const every = await scoreboard.chains();
    const times = every.flatMap((f) => (f.requestedAtMs === null ? [] : [f.requestedAtMs])).sort((a, b) => a - b);
    expect(every).toHaveLength(48 + 400 + 8);
    expect(every.filter((f) => f.requestedAtMs === null)).toHaveLength(8);
    const at = (share: number) => times[Math.floor(share * (times.length - 1))]!;
    // A period with no end ends now: those are asked at two nows, the others once.
    const bounds: (Pick<BoardFilter, 'fromMs' | 'toMs'> & { nowMs?: number })[] = [
      { nowMs: worldEndMs },
      { nowMs: at(1) + HOUR_MS },
      { fromMs: 0, nowMs: at(1) + HOUR_MS },
      { fromMs: at(0.1), nowMs: worldEndMs },
      { toMs: at(0.9) },
      { fromMs: at(0.05), toMs: at(0.05) + HOUR_MS },
      { fromMs: at(0.1), toMs: at(0.1) + 7 * DAY_MS },
      { fromMs: at(0.3), toMs: at(0.8) },
      { fromMs: at(0.7), toMs: at(0.7) + 30 * DAY_MS },
      { fromMs: at(1) + 1, toMs: at(1) + 2 },
    ];
    const routing: Pick<BoardFilter, 'group' | 'within'>[] = [{}, { group: 'ap-leads' }, { group: 'controller' }, { within: ['risk', 'ap-leads'] }, { group: 'risk', within: ['risk', 'ap-leads'] }];
    let compared = 0;
    for (const { nowMs, ...bound } of bounds) {
      for (const routed of routing) {
        const filter: BoardFilter = { ...bound, ...routed };
        const { fromMs, toMs } = periodOf(filter, nowMs ?? 0);
        const expected = JSON.stringify(await seriesOfEvery(scoreboard, every, filter, fromMs, toMs));
        expect(JSON.stringify(await readSeries(scoreboard, filter, fromMs, toMs)), JSON.stringify(filter)).toBe(expected);
        compared += 1;
      }
    }
    expect(compared).toBe(10 * 5);

    // An hour's figures of one group read that hour's rows and those ordered by seq (requests with
    // no time, and any whose time is below the tables' cursor): each read's pages grow from 50, so
    // past its range it reads at most its own rows again and 50.
    const period = { fromMs: at(0.02), toMs: at(0.02) + 3 * HOUR_MS, group: 'ap-leads' };
    const inPeriod = times.filter((t) => t >= period.fromMs && t < period.toMs).length;
    const bySeq = every.filter((f) => f.requestedAtMs === null || f.requestedAtMs <= 100_000).length;
    count.reset();
    const answer = await readSeries(scoreboard, period, period.fromMs, period.toMs);
    expect(answer.volume.reduce((n, p) => n + p.requests, 0)).toBeGreaterThan(0);
    // The period's rows twice: for its buckets, and for the board's own slice of the same range.
    expect(count.rowsRead()).toBeLessThanOrEqual(2 * (2 * inPeriod + 50) + 2 * bySeq + 50);
    expect(count.rowsRead()).toBeLessThan(every.length / 3);
    // The whole board's groups and trips come from its totals: an hour with no request reads no chain but those by seq.
    count.reset();
    await readSeries(scoreboard, {}, at(1) + 1, at(1) + 2);
    expect(count.rowsRead()).toBeLessThanOrEqual(2 * bySeq + 50 + 1);
  });
});
