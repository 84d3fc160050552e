import type { VolumePoint } from '../../../../shared/api.ts';
import { formatCount, formatShare } from '../../scoreboard-copy.ts';

interface VolumeChartProps {
  points: readonly VolumePoint[];
  fromMs: number;
  toMs: number;
  /** The period in words, e.g. `the last 7 days`. */
  period: string;
}

/** Width of one bar's slot in the drawing's units; the drawing is stretched to the chart's width. */
const SLOT = 10;
const BAR = 7;
/** The drawing is 100 units tall; the gap between a bar's two parts keeps each part against white. */
const GAP = 1.2;

const HOUR_MS = 3_600_000;
const hourFormat = new Intl.DateTimeFormat('en-GB', { hour: '2-digit', minute: '2-digit' });
const dayFormat = new Intl.DateTimeFormat('en-GB', { day: 'numeric', month: 'short' });
const dayHourFormat = new Intl.DateTimeFormat('en-GB', { day: 'numeric', month: 'short', hour: '2-digit', minute: '2-digit' });

/** A bucket's start, as precise as the buckets are: hours for a day, days for longer. */
function tickLabel(ms: number, spanMs: number): string {
  return spanMs <= 2 * 24 * HOUR_MS ? hourFormat.format(ms) : dayFormat.format(ms);
}

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
  const top = axisMax(busiest?.requests ?? 0);
  const spanMs = toMs - fromMs;
  const summary =
    requests === 0
      ? `No requests in ${period}.`
      : `${formatCount(requests)} requests in ${period}, ${formatCount(cleared)} of them (${formatShare(cleared / requests)}) cleared with no person. ` +
        `Busiest ${bucketWords} period: ${formatCount(busiest?.requests ?? 0)} requests from ${dayHourFormat.format(busiest?.start_ms ?? fromMs)}.`;

  return (
    <figure className="chart chart-wide">
      <figcaption className="chart-caption">
        <h3>Requests and cleared with no person, over time</h3>
        <p className="chart-note">
          One bar per {bucketWords} period of {period}. The dark foot of each bar cleared with no person; the light rest went to a person or is not settled yet.
        </p>
      </figcaption>
      <ul className="chart-legend" aria-hidden="true">
        <li>
          <span className="swatch swatch-cleared" /> Cleared with no person
        </li>
        <li>
          <span className="swatch swatch-other" /> All other requests
        </li>
      </ul>
      {requests === 0 ? (
        <p className="chart-empty">No requests in {period}. New requests appear here within seconds.</p>
      ) : (
        <div className="volume-plot">
          <div className="volume-axis" aria-hidden="true">
            <span className="axis-tick" style={{ bottom: '100%' }}>
              {top}
            </span>
            <span className="axis-tick" style={{ bottom: '50%' }}>
              {top / 2}
            </span>
            <span className="axis-tick" style={{ bottom: '0%' }}>
              0
            </span>
          </div>
          <div className="volume-area">
            <div className="volume-grid" aria-hidden="true">
              <span className="grid-line" style={{ bottom: '100%' }} />
              <span className="grid-line" style={{ bottom: '50%' }} />
              <span className="grid-line is-base" style={{ bottom: '0%' }} />
            </div>
            <svg
              className="volume-svg"
              role="img"
              aria-label={summary}
              viewBox={`0 0 ${Math.max(1, points.length) * SLOT} 100`}
              preserveAspectRatio="none"
            >
              {points.map((p, i) => {
                const total = (p.requests / top) * 100;
                const low = (p.cleared_no_person / top) * 100;
                const x = i * SLOT + (SLOT - BAR) / 2;
                const other = total - low - (low > 0 ? GAP : 0);
                return (
                  <g key={p.start_ms}>
                    <title>{`${dayHourFormat.format(p.start_ms)}: ${p.requests} requests, ${p.cleared_no_person} cleared with no person`}</title>
                    <rect className="bar-hit" x={i * SLOT} y={0} width={SLOT} height={100} />
                    {low > 0 && <rect className="bar-cleared" x={x} y={100 - low} width={BAR} height={low} />}
                    {other > 0 && <rect className="bar-other" x={x} y={100 - total} width={BAR} height={other} />}
                  </g>
                );
              })}
            </svg>
          </div>
          <div className="volume-ticks" aria-hidden="true">
            <span>{tickLabel(fromMs, spanMs)}</span>
            <span>{tickLabel(fromMs + spanMs / 2, spanMs)}</span>
            <span>now</span>
          </div>
        </div>
      )}
      <VolumeTable points={points} />
    </figure>
  );
}

/** The chart's numbers for screen readers: the periods that had requests. */
function VolumeTable({ points }: { points: readonly VolumePoint[] }) {
  const busy = points.filter((p) => p.requests > 0);
  if (busy.length === 0) return null;
  // In a wrapper: a table grows to fit its cells whatever its own width, so it cannot be the clipped box.
  return (
    <div className="sr-only">
      <table>
        <caption>Requests by period (periods with no requests are left out)</caption>
      <thead>
        <tr>
          <th scope="col">From</th>
          <th scope="col">Requests</th>
          <th scope="col">Cleared with no person</th>
        </tr>
      </thead>
      <tbody>
        {busy.map((p) => (
          <tr key={p.start_ms}>
            <th scope="row">{dayHourFormat.format(p.start_ms)}</th>
            <td>{p.requests}</td>
            <td>{p.cleared_no_person}</td>
          </tr>
        ))}
      </tbody>
      </table>
    </div>
  );
}
