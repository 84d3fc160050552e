import type { NotificationRecord, SessionInfo } from '../../../shared/api.ts';
import { assertNever } from '../../../shared/statuses.ts';
import { displayNameOf } from '../directory.ts';
import { formatFull, formatWhen, isoOf } from '../format.ts';
import { channelLabel, levelLabel, NOTIFICATION_STATUS_LABELS, NOTIFICATION_STATUS_TONES, notificationEventLabel } from '../labels.ts';
import { Badge } from './StateViews.tsx';

/** A mark beside each status, so it never rests on colour alone (the words are there too). */
const STATUS_ICONS: Record<NotificationRecord['status'], string> = {
  pending: '…',
  delivered: '✓',
  retrying: '↻',
  given_up: '⚠',
  in_digest: '≡',
};

/** Who a message went to, in words: a person by display name where this page knows it, a team channel, an agent's callback. */
export function recipientLabel(recipient: NotificationRecord['recipient'], session: SessionInfo): string {
  switch (recipient.kind) {
    case 'person':
      return recipient.name === session.name ? `${session.display_name} (you)` : displayNameOf(recipient.name);
    case 'group':
      return `${recipient.name} team channel`;
    case 'agent':
      return `agent ${recipient.name} (callback)`;
    default:
      return recipient.name;
  }
}

/** A moment with its full form on hover; `todayMs` on the same clock as `ms`. */
function When({ ms, todayMs }: { ms: number; todayMs?: number }) {
  return (
    <time dateTime={isoOf(ms)} title={formatFull(ms)}>
      {formatWhen(ms, todayMs)}
    </time>
  );
}

/** Where one message stands: delivered, retrying, given up, carried by a digest, or not tried yet. */
function DeliveryStatus({ message, todayMs }: { message: NotificationRecord; todayMs: number }) {
  const { status } = message;
  const badge = (
    <Badge tone={NOTIFICATION_STATUS_TONES[status]}>
      <span aria-hidden="true">{STATUS_ICONS[status]}</span>
      {NOTIFICATION_STATUS_LABELS[status]}
    </Badge>
  );
  switch (status) {
    case 'delivered':
      return (
        <p className="told-status">
          {badge}
          {message.delivered_at_ms !== null && (
            <span>
              {' '}
              at <When ms={message.delivered_at_ms} todayMs={todayMs} />
            </span>
          )}
          {message.digest !== null && <span>, in a digest with other waiting items</span>}
        </p>
      );
    case 'retrying':
      return (
        <>
          <p className="told-status">
            {badge} <span>after {message.digest !== null && 'the digest’s '}attempt {message.attempts}</span>
            {message.next_attempt_at_ms !== null && (
              <span>
                , next at <When ms={message.next_attempt_at_ms} todayMs={todayMs} />
              </span>
            )}
          </p>
          {message.last_error && <p className="told-error">Last error: {message.last_error}</p>}
        </>
      );
    case 'given_up':
      return (
        <div className="notice notice-warning told-gave-up">
          <p className="told-status">
            {badge}{' '}
            <span>
              after {message.attempts} {message.attempts === 1 ? 'attempt' : 'attempts'}
              {message.digest !== null && ' of the digest that carried it'}: {message.gave_up_reason ?? message.last_error ?? 'no reason recorded'}
            </span>
          </p>
        </div>
      );
    case 'in_digest':
      return (
        <p className="told-status">
          {badge} <span>held for a digest with other waiting items, not sent on its own</span>
        </p>
      );
    case 'pending':
      return <p className="told-status">{badge}</p>;
    default:
      return assertNever(status);
  }
}

interface WhoWasToldProps {
  notifications: readonly NotificationRecord[];
  session: SessionInfo;
  /** Server application clock minus this browser's: every time of a message is on the application clock. */
  offsetMs: number;
}

/** Every message Interlock decided to send about this item: to whom, how, what for, when, and whether it arrived. */
export function WhoWasToldPanel({ notifications, session, offsetMs }: WhoWasToldProps) {
  const messages = [...notifications].sort((a, b) => a.decided_at_ms - b.decided_at_ms);
  return (
    <section className="panel told-panel" aria-labelledby="told-title">
      <h2 id="told-title">Who was told</h2>
      {messages.length === 0 ? (
        <p className="muted told-empty">Nobody was notified: no channels are configured for this group.</p>
      ) : (
        <ol className="told-list" aria-label="Messages about this item, oldest first">
          {messages.map((message) => (
            <li key={message.id} className="told-item" data-status={message.status}>
              <h3 className="told-who">
                {recipientLabel(message.recipient, session)} <span className="told-channel">· {channelLabel(message.channel)}</span>
              </h3>
              <p className="told-what">
                {notificationEventLabel(message.event)}
                {message.level !== null && <span className="muted"> · {levelLabel(message.level)}</span>}
                <span className="muted">
                  {' · '}decided <When ms={message.decided_at_ms} todayMs={Date.now() + offsetMs} />
                </span>
              </p>
              <DeliveryStatus message={message} todayMs={Date.now() + offsetMs} />
            </li>
          ))}
        </ol>
      )}
    </section>
  );
}
