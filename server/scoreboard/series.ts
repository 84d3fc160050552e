import type { Scoreboard, VolumePoint } from '../../shared/api.ts';
import type { ChainFigures } from './figures.ts';

export type { VolumePoint } from '../../shared/api.ts';

/** Buckets shown at most on a chart; a wider range uses wider buckets. */
const BUCKETS_MAX = 48;
const HOUR_MS = 3_600_000;

/** Requests and those cleared with no person, per bucket of the range (hourly, or wider for long ranges). */
export function volumeSeries(chains: readonly ChainFigures[], fromMs: number, toMs: number): VolumePoint[] {
  const spanMs = Math.max(HOUR_MS, toMs - fromMs);
  const bucketMs = Math.ceil(spanMs / BUCKETS_MAX / HOUR_MS) * HOUR_MS;
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

/** Time-to-decision histogram edges, in minutes: what an approver team actually sees. */
const WAIT_EDGES_MIN = [5, 15, 30, 60, 120, 240, 480, 1440] as const;

/** How many decisions took how long. */
export function waitHistogram(chains: readonly ChainFigures[]): { label: string; count: number }[] {
  const bins = [...WAIT_EDGES_MIN.map((edge) => ({ label: `≤ ${edge >= 60 ? `${edge / 60} h` : `${edge} min`}`, count: 0 })), { label: '> 1 day', count: 0 }];
  for (const f of chains) {
    for (const wait of f.waitsMs) {
      const index = WAIT_EDGES_MIN.findIndex((edge) => wait <= edge * 60_000);
      bins[index === -1 ? bins.length - 1 : index]!.count += 1;
    }
  }
  return bins;
}

/** The board as CSV: one figure a line, nested figures flattened with a dot. */
export function scoreboardCsv(board: Scoreboard): string {
  const rows: [string, string][] = [];
  for (const [key, value] of Object.entries(board)) {
    if (value !== null && typeof value === 'object') {
      for (const [inner, v] of Object.entries(value)) rows.push([`${key}.${inner}`, v === null ? '' : String(v)]);
    } else rows.push([key, String(value)]);
  }
  return ['figure,value', ...rows.map(([k, v]) => `${JSON.stringify(k)},${v}`)].join('\n') + '\n';
}
