/**
 * What the scoreboard's charts over time share: a plot of one stacked bar per bucket (a dark part
 * at its foot, a light rest above it) with its axis, gridlines and time ticks, its legend, and the
 * table of its numbers for screen readers. Each chart says what its bars count.
 */

/** Width of one bar's slot in the drawing's units; the drawing is stretched to the chart's width. */
const SLOT = 10;
const BAR = 7;
/** The drawing is 100 units tall; the white gap between a bar's two parts keeps each part against white. */
const GAP = 1.2;

const HOUR_MS = 3_600_000;
const hourFormat = new Intl.DateTimeFormat('en-GB', { hour: '2-digit', minute: '2-digit' });
const dayFormat = new Intl.DateTimeFormat('en-GB', { day: 'numeric', month: 'short' });
/** A bucket's start in full: its day and time. */
export const dayHourFormat = new Intl.DateTimeFormat('en-GB', { day: 'numeric', month: 'short', hour: '2-digit', minute: '2-digit' });

/** One bucket's bar: its start, the dark foot, the whole, and what it says on hover. */
export interface TimeBar {
  startMs: number;
  foot: number;
  total: number;
  title: string;
}

interface TimeBarsPlotProps {
  bars: readonly TimeBar[];
  /** The value at the top of the axis; the middle gridline is half of it. */
  top: number;
  /** An axis value as the axis shows it. */
  axisLabel: (value: number) => string;
  /** The drawing in one sentence: its accessible name. */
  summary: string;
  fromMs: number;
  toMs: number;
  /** A wider axis, for amounts of money. */
  axisClassName?: string;
}

/** A bucket's start, as precise as the buckets are: hours for a day, days for longer. */
function tickLabel(ms: number, spanMs: number): string {
  return spanMs <= 2 * 24 * HOUR_MS ? hourFormat.format(ms) : dayFormat.format(ms);
}

/** The plot: an image named by its summary, each bar naming its numbers on hover. */
export function TimeBarsPlot({ bars, top, axisLabel, summary, fromMs, toMs, axisClassName }: TimeBarsPlotProps) {
  const spanMs = toMs - fromMs;
  return (
    <div className="volume-plot">
      <div className={axisClassName === undefined ? 'volume-axis' : `volume-axis ${axisClassName}`} aria-hidden="true">
        <span className="axis-tick" style={{ bottom: '100%' }}>
          {axisLabel(top)}
        </span>
        <span className="axis-tick" style={{ bottom: '50%' }}>
          {axisLabel(top / 2)}
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
        <svg className="volume-svg" role="img" aria-label={summary} viewBox={`0 0 ${Math.max(1, bars.length) * SLOT} 100`} preserveAspectRatio="none">
          {bars.map((bar, i) => {
            const total = (bar.total / top) * 100;
            const low = (bar.foot / top) * 100;
            const x = i * SLOT + (SLOT - BAR) / 2;
            const other = total - low - (low > 0 ? GAP : 0);
            return (
              <g key={bar.startMs}>
                <title>{bar.title}</title>
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
  );
}

/** The legend: what the dark foot and the light rest are. */
export function TimeBarsLegend({ foot, rest }: { foot: string; rest: string }) {
  return (
    <ul className="chart-legend" aria-hidden="true">
      <li>
        <span className="swatch swatch-cleared" /> {foot}
      </li>
      <li>
        <span className="swatch swatch-other" /> {rest}
      </li>
    </ul>
  );
}

interface TimeBarsTableProps {
  caption: string;
  /** The headings of the two number columns. */
  headings: readonly [string, string];
  /** The buckets worth a row (empty ones are left out, as the caption says), each with its two cells. */
  rows: readonly { startMs: number; cells: readonly [string | number, string | number] }[];
}

/** The chart's numbers for screen readers; nothing when no bucket has any. */
export function TimeBarsTable({ caption, headings, rows }: TimeBarsTableProps) {
  if (rows.length === 0) return null;
  // In a wrapper: a table grows to fit its cells whatever its own width, so it cannot be the clipped box.
  return (
    <div className="sr-only">
      <table>
        <caption>{caption}</caption>
        <thead>
          <tr>
            <th scope="col">From</th>
            <th scope="col">{headings[0]}</th>
            <th scope="col">{headings[1]}</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((row) => (
            <tr key={row.startMs}>
              <th scope="row">{dayHourFormat.format(row.startMs)}</th>
              <td>{row.cells[0]}</td>
              <td>{row.cells[1]}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
