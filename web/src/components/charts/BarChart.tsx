import { formatCount } from '../../scoreboard-copy.ts';

/** One bar: what it counts, how many, and an optional line of explanation under its name. */
export interface Bar {
  key: string;
  label: string;
  count: number;
  note?: string;
}

interface BarChartProps {
  title: string;
  /** One sentence under the title: what is counted and how. */
  note: string;
  bars: readonly Bar[];
  /** The header of the names column, for screen readers: `Reason`, `Group`, `Wait`. */
  nameHeading: string;
  /** What the chart says when every count is zero. */
  empty: string;
  tone?: 'accent' | 'danger' | 'warning';
}

/**
 * Horizontal bars as a real table (name, count), the bar drawn beside each count: screen
 * readers read the table, and nothing is said twice.
 */
export function BarChart({ title, note, bars, nameHeading, empty, tone = 'accent' }: BarChartProps) {
  const max = Math.max(1, ...bars.map((b) => b.count));
  const total = bars.reduce((n, b) => n + b.count, 0);
  return (
    <figure className="chart">
      <figcaption className="chart-caption">
        <h3>{title}</h3>
        <p className="chart-note">{note}</p>
      </figcaption>
      {total === 0 ? (
        <p className="chart-empty">{empty}</p>
      ) : (
        <table className={`bar-table bar-${tone}`}>
          <thead className="sr-only">
            <tr>
              <th scope="col">{nameHeading}</th>
              <th scope="col">Count</th>
            </tr>
          </thead>
          <tbody>
            {bars.map((bar) => (
              <tr key={bar.key}>
                <th scope="row">
                  {bar.label}
                  {bar.note && <span className="bar-note">{bar.note}</span>}
                </th>
                <td>
                  <span className="bar-cell">
                    <svg className="bar-svg" viewBox="0 0 100 10" preserveAspectRatio="none" aria-hidden="true" focusable="false">
                      <rect className="bar-track" x={0} y={0} width={100} height={10} />
                      {bar.count > 0 && <rect className="bar-fill" x={0} y={0} width={Math.max(1.5, (bar.count / max) * 100)} height={10} />}
                    </svg>
                    <span className="bar-count">{formatCount(bar.count)}</span>
                  </span>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </figure>
  );
}
