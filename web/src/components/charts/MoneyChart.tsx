import type { MoneyPoint } from '../../../../shared/api.ts';
import { currencyName, formatMinor } from '../../scoreboard-copy.ts';

interface MoneyChartProps {
  currency: string;
  points: readonly MoneyPoint[];
  fromMs: number;
  toMs: number;
  /** The period in words, e.g. `the last 7 days`. */
  period: string;
}

/** Width of one bar's slot in the drawing's units; the drawing is stretched to the chart's width. */
const SLOT = 10;
const BAR = 7;
/** The white gap between a bar's two parts, so each part stands against white. */
const GAP = 1.2;

const HOUR_MS = 3_600_000;
const hourFormat = new Intl.DateTimeFormat('en-GB', { hour: '2-digit', minute: '2-digit' });
const dayFormat = new Intl.DateTimeFormat('en-GB', { day: 'numeric', month: 'short' });
const dayHourFormat = new Intl.DateTimeFormat('en-GB', { day: 'numeric', month: 'short', hour: '2-digit', minute: '2-digit' });

/** The top of the axis in minor units: 1, 2 or 5 times a power of ten, at least the largest bar, so its half is round too. */
function axisTop(max: number): number {
  if (max <= 0) return 2;
  const power = 10 ** Math.floor(Math.log10(max));
  const step = [1, 2, 5, 10].find((m) => m * power >= max) ?? 10;
  return step * power;
}

/**
 * Money refunded over time in one currency, one bar per bucket: the part sent with no person dark
 * at its foot, the part sent after a person light above it. The drawing is an image with a
 * sentence; the numbers are in a table for screen readers, and each bar names its amounts on hover.
 */
export function MoneyChart({ currency, points, fromMs, toMs, period }: MoneyChartProps) {
  const noPerson = points.reduce((n, p) => n + p.no_person_minor, 0);
  const afterPerson = points.reduce((n, p) => n + p.after_person_minor, 0);
  const top = axisTop(Math.max(0, ...points.map((p) => p.no_person_minor + p.after_person_minor)));
  const money = (minor: number) => formatMinor(minor, currency);
  const spanMs = toMs - fromMs;
  const tick = (ms: number) => (spanMs <= 2 * 24 * HOUR_MS ? hourFormat.format(ms) : dayFormat.format(ms));
  const summary = `${money(noPerson + afterPerson)} refunded in ${period}: ${money(noPerson)} with no person, ${money(afterPerson)} after a person.`;
  return (
    <figure className="chart chart-wide money-chart" data-currency={currency}>
      <figcaption className="chart-caption">
        <h3>Refunded in {currencyName(currency)}, over time: by policy or after a person</h3>
        <p className="chart-note">
          {summary} A request counts in the period it was made, as every figure here does. Currencies are never added together.
        </p>
      </figcaption>
      <ul className="chart-legend" aria-hidden="true">
        <li>
          <span className="swatch swatch-cleared" /> With no person (policy)
        </li>
        <li>
          <span className="swatch swatch-other" /> After a person
        </li>
      </ul>
      <div className="volume-plot">
        <div className="volume-axis money-axis" aria-hidden="true">
          <span className="axis-tick" style={{ bottom: '100%' }}>
            {money(top)}
          </span>
          <span className="axis-tick" style={{ bottom: '50%' }}>
            {money(top / 2)}
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
          <svg className="volume-svg" role="img" aria-label={summary} viewBox={`0 0 ${Math.max(1, points.length) * SLOT} 100`} preserveAspectRatio="none">
            {points.map((p, i) => {
              const total = ((p.no_person_minor + p.after_person_minor) / top) * 100;
              const low = (p.no_person_minor / top) * 100;
              const x = i * SLOT + (SLOT - BAR) / 2;
              const other = total - low - (low > 0 ? GAP : 0);
              return (
                <g key={p.start_ms}>
                  <title>{`${dayHourFormat.format(p.start_ms)}: ${money(p.no_person_minor)} with no person, ${money(p.after_person_minor)} after a person`}</title>
                  <rect className="bar-hit" x={i * SLOT} y={0} width={SLOT} height={100} />
                  {low > 0 && <rect className="bar-cleared" x={x} y={100 - low} width={BAR} height={low} />}
                  {other > 0 && <rect className="bar-other" x={x} y={100 - total} width={BAR} height={other} />}
                </g>
              );
            })}
          </svg>
        </div>
        <div className="volume-ticks" aria-hidden="true">
          <span>{tick(fromMs)}</span>
          <span>{tick(fromMs + spanMs / 2)}</span>
          <span>now</span>
        </div>
      </div>
      <div className="sr-only">
        <table>
          <caption>Refunded in {currencyName(currency)} by period (periods with no refund are left out)</caption>
          <thead>
            <tr>
              <th scope="col">From</th>
              <th scope="col">With no person</th>
              <th scope="col">After a person</th>
            </tr>
          </thead>
          <tbody>
            {points
              .filter((p) => p.no_person_minor + p.after_person_minor > 0)
              .map((p) => (
                <tr key={p.start_ms}>
                  <th scope="row">{dayHourFormat.format(p.start_ms)}</th>
                  <td>{money(p.no_person_minor)}</td>
                  <td>{money(p.after_person_minor)}</td>
                </tr>
              ))}
          </tbody>
        </table>
      </div>
    </figure>
  );
}
