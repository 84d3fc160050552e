import type { MoneyPoint } from '../../../../shared/api.ts';
import { currencyName, formatMinor } from '../../scoreboard-copy.ts';
import { dayHourFormat, TimeBarsLegend, TimeBarsPlot, TimeBarsTable } from './TimeBars.tsx';

interface MoneyChartProps {
  currency: string;
  points: readonly MoneyPoint[];
  fromMs: number;
  toMs: number;
  /** The period in words, e.g. `the last 7 days`. */
  period: string;
}

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
  const money = (minor: number) => formatMinor(minor, currency);
  const summary = `${money(noPerson + afterPerson)} refunded in ${period}: ${money(noPerson)} with no person, ${money(afterPerson)} after a person.`;
  const bars = points.map((p) => ({
    startMs: p.start_ms,
    foot: p.no_person_minor,
    total: p.no_person_minor + p.after_person_minor,
    title: `${dayHourFormat.format(p.start_ms)}: ${money(p.no_person_minor)} with no person, ${money(p.after_person_minor)} after a person`,
  }));
  const top = axisTop(Math.max(0, ...bars.map((bar) => bar.total)));
  return (
    <figure className="chart chart-wide money-chart" data-currency={currency}>
      <figcaption className="chart-caption">
        <h3>Refunded in {currencyName(currency)}, over time: by policy or after a person</h3>
        <p className="chart-note">
          {summary} A request counts in the period it was made, as every figure here does. Currencies are never added together.
        </p>
      </figcaption>
      <TimeBarsLegend foot="With no person (policy)" rest="After a person" />
      <TimeBarsPlot bars={bars} top={top} axisLabel={money} summary={summary} fromMs={fromMs} toMs={toMs} axisClassName="money-axis" />
      <TimeBarsTable
        caption={`Refunded in ${currencyName(currency)} by period (periods with no refund are left out)`}
        headings={['With no person', 'After a person']}
        rows={points
          .filter((p) => p.no_person_minor + p.after_person_minor > 0)
          .map((p) => ({ startMs: p.start_ms, cells: [money(p.no_person_minor), money(p.after_person_minor)] }))}
      />
    </figure>
  );
}
