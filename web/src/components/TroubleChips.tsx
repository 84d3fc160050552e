import type { InboxItem } from '../../../shared/api.ts';
import { formatFull, formatMinute, formatMoney, isoOf } from '../format.ts';
import { shownFactsOf, TROUBLE_ICONS, TROUBLE_TONES, troublesOf } from '../trouble.ts';

/** The item's troubles as chips, each with a mark and words (never colour alone) and a sentence on hover. */
export function TroubleChips({ item, appNowMs, offsetMs = 0 }: { item: InboxItem; appNowMs: number; offsetMs?: number }) {
  const troubles = troublesOf(item, appNowMs, offsetMs);
  if (troubles.length === 0) return null;
  return (
    <ul className="chips" aria-label="Before you decide">
      {troubles.map((trouble) => (
        <li key={trouble.kind} className={`chip chip-${TROUBLE_TONES[trouble.kind]}`} data-trouble={trouble.kind} title={trouble.detail}>
          <span aria-hidden="true">{TROUBLE_ICONS[trouble.kind]}</span>
          {trouble.text}
          <span className="sr-only">. {trouble.detail}</span>
        </li>
      ))}
    </ul>
  );
}

interface FactsNowProps {
  item: InboxItem;
  currency: string | null;
  offsetMs: number;
  appNowMs: number;
}

/**
 * What Stripe says about the payment, and as of when: "$70.00 left of $100.00 paid · as of 14:02".
 * Until Stripe is read for the display (a new item, a restart), the facts journaled when the item
 * was queued, with their own time: "as of 14:02, when queued".
 */
export function FactsNow({ item, currency, offsetMs, appNowMs }: FactsNowProps) {
  const shown = shownFactsOf(item, offsetMs);
  if (!shown) return <p className="facts-now muted">Stripe not read yet</p>;
  const { figures, asOfAppMs, source } = shown;
  const money = (cents: number) => formatMoney(cents, figures.currency || currency);
  const title =
    source === 'queued'
      ? `Read from Stripe when it was queued, ${formatFull(asOfAppMs)}; it is read again shortly`
      : `Read from Stripe ${formatFull(asOfAppMs)}${figures.error ? `; the latest read failed: ${figures.error}` : ''}`;
  return (
    <p className="facts-now" data-facts-source={source} title={title}>
      <span>
        {money(figures.remaining)} left of {money(figures.amount_received)} paid
      </span>{' '}
      <span className="muted">
        · {figures.error ? 'last read ' : 'as of '}
        <time dateTime={isoOf(asOfAppMs)}>{formatMinute(asOfAppMs, appNowMs)}</time>
        {source === 'queued' && ', when queued'}
        {figures.error && <span className="facts-error"> (Stripe could not be read since)</span>}
      </span>
    </p>
  );
}
