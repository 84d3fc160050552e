import { formatDuration, formatFull, formatWhen, isoOf } from '../format.ts';
import { useNowMs } from '../hooks.ts';

/** Under this long left, the countdown turns amber. */
const SOON_MS = 30 * 60_000;

interface SlaCountdownProps {
  dueMs: number | null;
  breach: boolean;
  /** Server application clock minus the browser clock. */
  offsetMs: number;
  compact?: boolean;
}

/** Time left before the item moves up its chain, ticking on the server's clock. */
export function SlaCountdown({ dueMs, breach, offsetMs, compact = false }: SlaCountdownProps) {
  const serverNowMs = useNowMs() + offsetMs;
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
        {leftMs > 0 ? 'moves up at ' : 'moving up the chain · was due '}
        <time dateTime={isoOf(dueMs)} title={formatFull(dueMs)}>
          {formatWhen(dueMs, serverNowMs)}
        </time>
      </span>
    </p>
  );
}
