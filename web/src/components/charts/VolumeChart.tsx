import type { VolumePoint } from '../../../../shared/api.ts';
import { formatCount, formatShare } from '../../scoreboard-copy.ts';
import { dayHourFormat, TimeBarsLegend, TimeBarsPlot, TimeBarsTable } from './TimeBars.tsx';

interface VolumeChartProps {
  points: readonly VolumePoint[];
  fromMs: number;
  toMs: number;
  /** The period in words, e.g. `the last 7 days`. */
  period: string;
}

const HOUR_MS = 3_600_000;

/** The top of the axis: even, so the middle gridline is a whole number of requests, and round-ish above ten. */
function axisMax(max: number): number {
  const half = Math.ceil(max / 2);
  const unit = half <= 10 ? 1 : half <= 50 ? 5 : 5 * 10 ** (Math.floor(Math.log10(half)) - 1);
  return Math.max(1, Math.ceil(half / unit) * unit) * 2;
}

/**
 * Requests over time, one bar per bucket, the part cleared with no person drawn dark at its foot.
 * The drawing is an image with a one-sentence summary; every number is in a table for screen
 * readers, and each bar names its numbers on hover.
 */
export function VolumeChart({ points, fromMs, toMs, period }: VolumeChartProps) {
  const requests = points.reduce((n, p) => n + p.requests, 0);
  const cleared = points.reduce((n, p) => n + p.cleared_no_person, 0);
  const busiest = points.reduce<VolumePoint | null>((best, p) => (p.requests > (best?.requests ?? 0) ? p : best), null);
  const bucketMs = points.length > 1 ? points[1]!.start_ms - points[0]!.start_ms : toMs - fromMs;
  const bucketWords = bucketMs % (24 * HOUR_MS) === 0 ? `${bucketMs / (24 * HOUR_MS)}-day` : `${bucketMs / HOUR_MS}-hour`;
  const summary =
    requests === 0
      ? `No requests in ${period}.`
      : `${formatCount(requests)} requests in ${period}, ${formatCount(cleared)} of them (${formatShare(cleared / requests)}) cleared with no person. ` +
        `Busiest ${bucketWords} period: ${formatCount(busiest?.requests ?? 0)} requests from ${dayHourFormat.format(busiest?.start_ms ?? fromMs)}.`;
  const bars = points.map((p) => ({
    startMs: p.start_ms,
    foot: p.cleared_no_person,
    total: p.requests,
    title: `${dayHourFormat.format(p.start_ms)}: ${p.requests} requests, ${p.cleared_no_person} cleared with no person`,
  }));

  return (
    <figure className="chart chart-wide">
      <figcaption className="chart-caption">
        <h3>Requests and cleared with no person, over time</h3>
        <p className="chart-note">
          One bar per {bucketWords} period of {period}. The dark foot of each bar cleared with no person; the light rest went to a person or is not settled yet.
        </p>
      </figcaption>
      <TimeBarsLegend foot="Cleared with no person" rest="All other requests" />
      {requests === 0 ? (
        <p className="chart-empty">No requests in {period}. New requests appear here within seconds.</p>
      ) : (
        <TimeBarsPlot bars={bars} top={axisMax(busiest?.requests ?? 0)} axisLabel={String} summary={summary} fromMs={fromMs} toMs={toMs} />
      )}
      <TimeBarsTable
        caption="Requests by period (periods with no requests are left out)"
        headings={['Requests', 'Cleared with no person']}
        rows={points.filter((p) => p.requests > 0).map((p) => ({ startMs: p.start_ms, cells: [p.requests, p.cleared_no_person] }))}
      />
    </figure>
  );
}
