import type { MoneyPoint, Scoreboard, VolumePoint } from '../../shared/api.ts';
import { csvCell, csvHeader, csvRecord, textCell } from '../csv/writer.ts';
import type { ChainFigures } from './figures.ts';
import { tripKey, tripsOf } from './totals.ts';

export type { MoneyPoint, VolumePoint } from '../../shared/api.ts';

/** Buckets shown at most on a chart; a wider range uses wider buckets. */
const BUCKETS_MAX = 48;
const HOUR_MS = 3_600_000;

/** The width of one bucket of a range: whole hours, at most `BUCKETS_MAX` buckets. */
function bucketMsOf(fromMs: number, toMs: number): number {
  const spanMs = Math.max(HOUR_MS, toMs - fromMs);
  return Math.ceil(spanMs / BUCKETS_MAX / HOUR_MS) * HOUR_MS;
}

/**
 * Money refunded per bucket of the range, by currency (never summed across currencies): with no
 * person, and after a person. A request counts in the bucket it was made in, as every figure of a
 * period does, so the buckets of a currency add up to its refunded figures for the same period.
 */
export function moneySeries(chains: Iterable<ChainFigures>, fromMs: number, toMs: number): Record<string, MoneyPoint[]> {
  const series = new PeriodSeries(fromMs, toMs);
  for (const f of chains) series.addMoney(f);
  return series.money();
}

/** Requests and those cleared with no person, per bucket of the range (hourly, or wider for long ranges). */
export function volumeSeries(chains: Iterable<ChainFigures>, fromMs: number, toMs: number): VolumePoint[] {
  const series = new PeriodSeries(fromMs, toMs);
  for (const f of chains) series.addVolume(f);
  return series.volume();
}

/**
 * The buckets of a period, summed chain by chain as chains are read: volume and money of the
 * chains requested in it, and the waits of those given. Memory holds the buckets, never the chains.
 */
export class PeriodSeries {
  readonly #fromMs: number;
  readonly #toMs: number;
  readonly #bucketMs: number;
  readonly #volume: VolumePoint[] = [];
  readonly #money: Record<string, MoneyPoint[]> = {};
  readonly #waits = new WaitBins();

  constructor(fromMs: number, toMs: number) {
    this.#fromMs = fromMs;
    this.#toMs = toMs;
    this.#bucketMs = bucketMsOf(fromMs, toMs);
    for (const start of this.#starts()) this.#volume.push({ start_ms: start, requests: 0, cleared_no_person: 0 });
  }

  *#starts(): Generator<number> {
    for (let start = this.#fromMs; start < this.#toMs; start += this.#bucketMs) yield start;
  }

  /** The bucket index a chain was requested in; null when it has no time or falls outside the range. */
  #bucketOf(f: ChainFigures): number | null {
    if (f.requestedAtMs === null || f.requestedAtMs < this.#fromMs || f.requestedAtMs >= this.#toMs) return null;
    return Math.floor((f.requestedAtMs - this.#fromMs) / this.#bucketMs);
  }

  addVolume(f: ChainFigures): void {
    const at = f.root ? this.#bucketOf(f) : null;
    const point = at === null ? undefined : this.#volume[at];
    if (!point) return;
    point.requests += 1;
    if (f.cleared) point.cleared_no_person += 1;
  }

  addMoney(f: ChainFigures): void {
    const at = f.money.refunded_minor === 0 ? null : this.#bucketOf(f);
    if (at === null) return;
    let points = this.#money[f.currency];
    if (points === undefined) {
      points = [...this.#starts()].map((start) => ({ start_ms: start, no_person_minor: 0, after_person_minor: 0 }));
      this.#money[f.currency] = points;
    }
    const point = points[at];
    if (!point) return;
    point.no_person_minor += f.money.refunded_no_person_minor;
    point.after_person_minor += f.money.refunded_after_person_minor;
  }

  /** A chain's waits, counted whatever its time: the caller gives those the histogram covers. */
  addWaits(f: ChainFigures): void {
    this.#waits.add(f);
  }

  volume(): VolumePoint[] {
    return this.#volume;
  }

  money(): Record<string, MoneyPoint[]> {
    return Object.fromEntries(Object.keys(this.#money).sort().map((currency) => [currency, this.#money[currency]!]));
  }

  waits(): { label: string; count: number }[] {
    return this.#waits.bins();
  }
}

/**
 * Trips to a person by the reason they went and the group they went to first, most first: what
 * "escalations by reason" means once nearly every trip is a rule's (`needs_judgment`). Counted
 * from the chains of the slice the caller gives, a trip as the board counts it.
 */
export function escalationsByReasonAndGroup(chains: Iterable<ChainFigures>): { reason: string; group: string; count: number }[] {
  const counts: Record<string, number> = {};
  for (const f of chains) for (const { reason, group } of tripsOf(f)) counts[tripKey(reason, group)] = (counts[tripKey(reason, group)] ?? 0) + 1;
  return tripsByCount(counts);
}

/** Trips counted by `tripKey`, as `escalationsByReasonAndGroup` lists them: most first, then by reason and group. */
export function tripsByCount(counts: Readonly<Record<string, number>>): { reason: string; group: string; count: number }[] {
  const trips = Object.entries(counts).map(([key, count]) => ({ ...tripOfKey(key), count }));
  return trips.sort((a, b) => b.count - a.count || a.reason.localeCompare(b.reason) || a.group.localeCompare(b.group));
}

/** The reason and group a `tripKey` was made of. */
function tripOfKey(key: string): { reason: string; group: string } {
  const parsed: unknown = JSON.parse(key);
  if (!Array.isArray(parsed) || typeof parsed[0] !== 'string' || typeof parsed[1] !== 'string') throw new Error(`a trip is keyed [reason, group], not ${key}`);
  return { reason: parsed[0], group: parsed[1] };
}

/** Time-to-decision histogram edges, in minutes: what an approver team actually sees. */
const WAIT_EDGES_MIN = [5, 15, 30, 60, 120, 240, 480, 1440] as const;

/** How many decisions took how long, counted chain by chain. */
class WaitBins {
  readonly #bins = [...WAIT_EDGES_MIN.map((edge) => ({ label: `≤ ${edge >= 60 ? `${edge / 60} h` : `${edge} min`}`, count: 0 })), { label: '> 1 day', count: 0 }];

  add(f: ChainFigures): void {
    for (const wait of f.waitsMs) {
      const index = WAIT_EDGES_MIN.findIndex((edge) => wait <= edge * 60_000);
      this.#bins[index === -1 ? this.#bins.length - 1 : index]!.count += 1;
    }
  }

  bins(): { label: string; count: number }[] {
    return this.#bins;
  }
}

/** How many decisions took how long. */
export function waitHistogram(chains: Iterable<ChainFigures>): { label: string; count: number }[] {
  const bins = new WaitBins();
  for (const f of chains) bins.add(f);
  return bins.bins();
}

/** One figure and its rows, nested figures flattened with a dot (`money.jpy.refunded_minor`). */
function csvRows(key: string, value: unknown, rows: [string, string][]): void {
  if (value !== null && typeof value === 'object') {
    for (const [inner, v] of Object.entries(value)) csvRows(`${key}.${inner}`, v, rows);
  } else rows.push([key, csvCell(typeof value === 'number' || value === null ? value : String(value))]);
}

/**
 * The board as CSV (the ledger's writer: RFC 4180, CRLF, formula-safe): one figure a line, in the
 * board's order, nested figures flattened with a dot.
 * Figures added later come after the earlier ones, so a reader of the older lines is not moved.
 * Money is in the currency's smallest unit, one currency per line, never summed across them.
 */
export function scoreboardCsv(board: Scoreboard): string {
  const rows: [string, string][] = [];
  for (const [key, value] of Object.entries(board)) csvRows(key, value, rows);
  // Money comes one currency after another: a figure added later goes after them all, each in its turn.
  const addedAt = (key: string) => ADDED_LATER.findIndex((added) => added(key));
  const ordered = [...rows.filter(([key]) => addedAt(key) === -1)];
  for (let turn = 0; turn < ADDED_LATER.length; turn++) ordered.push(...rows.filter(([key]) => addedAt(key) === turn));
  return csvHeader(['figure', 'value']) + ordered.map(([key, value]) => csvRecord([textCell(key), value])).join('');
}

const moneyField = (field: string) => (key: string) => key.startsWith('money.') && key.slice(key.lastIndexOf('.') + 1) === field;

/**
 * Figures added after the CSV first had money, in the order they were added: each written after
 * every line the CSV had before it (a new money figure after every currency's earlier lines).
 */
const ADDED_LATER: ReadonlyArray<(key: string) => boolean> = [
  moneyField('failed_at_stripe_minor'),
  (key) => key === 'approved_on_facts_now',
  moneyField('exposure_waiting_stripe_minor'),
];
