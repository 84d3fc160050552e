import type { ItemDetail, NotificationRecord, SessionInfo } from '../../../shared/api.ts';
import { useNowMs } from '../hooks.ts';
import { channelLabel, levelLabel, NOTIFICATION_STATUS_LABELS } from '../labels.ts';
import { atTopOfChain } from '../trouble.ts';
import { ReasonSummary } from './ReasonSummary.tsx';
import { SlaCountdown } from './SlaCountdown.tsx';
import { TroubleChips } from './TroubleChips.tsx';
import { recipientLabel } from './WhoWasToldPanel.tsx';

/**
 * The deadline an item at the top of its chain missed: as the queue knows it, else the deadline of
 * the escalation before its breach from the history, else when the breach was recorded.
 */
export function missedDeadlineMs(detail: ItemDetail): number | null {
  const item = detail.item;
  if (!item || !atTopOfChain(item)) return null;
  if (item.missed_due_ms !== null) return item.missed_due_ms;
  for (let i = detail.history.length - 1; i >= 0; i--) {
    const entry = detail.history[i];
    if (entry?.kind === 'ESCALATED' && entry.due_ms !== null) return entry.due_ms;
  }
  return item.escalated_at_ms;
}

/** Who was told the item is overdue at its level: "Told: Farah Malik (Webhook, given up)". */
function toldAboutBreach(notifications: readonly NotificationRecord[], level: number, session: SessionInfo): string {
  const told = notifications.filter((n) => (n.event === 'breach' || n.event === 'moved_up') && (n.level === null || n.level === level));
  if (told.length === 0) return 'nobody was told: no channels reach this group';
  const lines = told.map((n) => `${recipientLabel(n.recipient, session)} (${channelLabel(n.channel)}, ${NOTIFICATION_STATUS_LABELS[n.status].toLowerCase()})`);
  return `told: ${[...new Set(lines)].join(', ')}`;
}

interface WhyPanelProps {
  detail: ItemDetail;
  session: SessionInfo;
  currency: string | null;
  offsetMs: number;
}

/** Why a person must decide, what is wrong now, the failed rules or changes, where it sits and how long is left. */
export function WhyPanel({ detail, session, currency, offsetMs }: WhyPanelProps) {
  const appNowMs = useNowMs() + offsetMs;
  const item = detail.item;
  if (!item) return null;
  const missed = missedDeadlineMs(detail);
  return (
    <section className="panel why-panel" aria-labelledby="why-title">
      <div className="panel-head">
        <h2 id="why-title">Why it needs a person</h2>
        <p className="row-group">
          <span className="group-name">{item.group}</span> <span className="muted">· {levelLabel(item.level)}</span>
        </p>
      </div>
      <TroubleChips item={item} appNowMs={appNowMs} offsetMs={offsetMs} />
      <ReasonSummary item={item} currency={currency} reader={session.role !== 'approver'} />
      <div className="why-sla">
        <SlaCountdown
          dueMs={item.due_ms}
          breach={item.breach}
          offsetMs={offsetMs}
          missedDueMs={missed}
          told={missed === null ? null : toldAboutBreach(detail.notifications, item.level, session)}
        />
      </div>
    </section>
  );
}
