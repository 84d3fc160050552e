import { formatCount } from '../../scoreboard-copy.ts';

interface BreachTableProps {
  /** Deadlines missed, by the group that had the item when its deadline passed. */
  missed: Record<string, number>;
  /** The same breaches, by the group the item moved to (or stayed with at the top of its chain). */
  received: Record<string, number>;
}

/**
 * SLA breaches per group, two counts side by side: the deadlines the group missed (the only
 * count drawn in red: it is theirs) and the items that reached it after another group missed
 * one (no fault of theirs, so no colour). A real table; the bar beside a missed count is drawn.
 */
export function BreachTable({ missed, received }: BreachTableProps) {
  const groups = [...new Set([...Object.keys(missed), ...Object.keys(received)])].sort(
    (a, b) => (missed[b] ?? 0) - (missed[a] ?? 0) || (received[b] ?? 0) - (received[a] ?? 0) || a.localeCompare(b),
  );
  const max = Math.max(1, ...Object.values(missed));
  return (
    <figure className="chart">
      <figcaption className="chart-caption">
        <h3>SLA breaches by group</h3>
        <p className="chart-note">
          Missed: deadlines that passed while the group had the item. Reached it late: items it got after another group missed theirs, not counted against it.
        </p>
      </figcaption>
      {groups.length === 0 ? (
        <p className="chart-empty">No deadline was missed in this period.</p>
      ) : (
        <table className="bar-table bar-danger breach-table">
          <thead>
            <tr>
              <th scope="col">Group</th>
              <th scope="col">Missed</th>
              <th scope="col" className="breach-received">
                Reached it late
              </th>
            </tr>
          </thead>
          <tbody>
            {groups.map((group) => {
              const count = missed[group] ?? 0;
              return (
                <tr key={group} data-group={group} data-missed={count}>
                  <th scope="row">{group}</th>
                  <td>
                    <span className="bar-cell">
                      <svg className="bar-svg" viewBox="0 0 100 10" preserveAspectRatio="none" aria-hidden="true" focusable="false">
                        <rect className="bar-track" x={0} y={0} width={100} height={10} />
                        {count > 0 && <rect className="bar-fill" x={0} y={0} width={Math.max(1.5, (count / max) * 100)} height={10} />}
                      </svg>
                      <span className={`bar-count${count === 0 ? ' bar-count-none' : ''}`}>{formatCount(count)}</span>
                    </span>
                  </td>
                  <td className="breach-received">{formatCount(received[group] ?? 0)}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
    </figure>
  );
}
