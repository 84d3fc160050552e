import { formatDuration, formatFull, formatMinute, isoOf } from '../format.ts';
import { useNowMs } from '../hooks.ts';

/** Under this long left, the countdown turns amber. */
const SOON_MS = 30 * 60_000;

interface SlaCountdownProps {
  dueMs: number | null;
  breach: boolean;
  /** Server application clock minus the browser clock. */
  offsetMs: number;
  compact?: boolean;
  /**
   * At the top of its chain (breached, no deadline left): the deadline it missed, on the
   * application clock. The inbox knows only when the breach was recorded; the item page finds the
   * deadline itself in the history.
   */
  missedDueMs?: number | null;
  /** At the top of its chain: who was told it is overdue, in words ("Farah Malik by email"). */
  told?: string | null;
}

/** Time left before the deadline, or how long it is overdue, on the server's clock: to the minute, and to the second in its last two minutes. */
export function SlaCountdown({ dueMs, breach, offsetMs, compact = false, missedDueMs = null, told = null }: SlaCountdownProps) {
  const serverNowMs = useNowMs() + offsetMs;
  if (dueMs === null && breach && missedDueMs !== null) {
    // The last group of its chain missed its deadline too: nobody else gets it, so no "moves up".
    return (
      <p className="sla sla-over sla-top">
        <span className="sla-main">
          Overdue by <span className="sla-time">{formatDuration(serverNowMs - missedDueMs)}</span>
        </span>
        <span className="sla-sub">
          last group of its chain{!compact && told ? ` · ${told}` : ''}
        </span>
      </p>
    );
  }
  if (dueMs === null) {
    return (
      <p className="sla sla-none">
        <span className="sla-main">{breach ? 'Top of its chain' : 'No deadline'}</span>
        {!compact && <span className="sla-sub">{breach ? 'It stays here until decided' : 'This route has no SLA'}</span>}
      </p>
    );
  }
  const leftMs = dueMs - serverNowMs;
  const tone = leftMs <= 0 ? 'sla-over' : leftMs < SOON_MS ? 'sla-soon' : 'sla-ok';
  return (
    <p className={`sla ${tone}`}>
      <span className="sla-main">
        {leftMs > 0 ? (
          <>
            Due in <span className="sla-time">{formatDuration(leftMs)}</span>
          </>
        ) : (
          <>
            Overdue <span className="sla-time">{formatDuration(-leftMs)}</span>
          </>
        )}
      </span>
      <span className="sla-sub">
        {leftMs > 0 ? 'deadline ' : 'was due '}
        <time dateTime={isoOf(dueMs)} title={formatFull(dueMs)}>
          {formatMinute(dueMs, serverNowMs)}
        </time>
      </span>
    </p>
  );
}
