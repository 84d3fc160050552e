import type { CurrentFacts, InboxItem } from '../../../shared/api.ts';
import { wallToAppMs } from '../app-time.ts';
import { formatFull, formatMinute, formatMoney, isoOf } from '../format.ts';
import { TROUBLE_ICONS, TROUBLE_TONES, troublesOf } from '../trouble.ts';

/** The item's troubles as chips, each with a mark and words (never colour alone) and a sentence on hover. */
export function TroubleChips({ item, appNowMs }: { item: InboxItem; appNowMs: number }) {
  const troubles = troublesOf(item, appNowMs);
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
  current: CurrentFacts | null | undefined;
  currency: string | null;
  offsetMs: number;
  appNowMs: number;
}

/** What Stripe says about the payment now, and as of when: "$70.00 left of $100.00 paid · as of 14:02". */
export function FactsNow({ current, currency, offsetMs, appNowMs }: FactsNowProps) {
  if (!current) return <p className="facts-now muted">Stripe not read yet</p>;
  const money = (cents: number) => formatMoney(cents, current.currency || currency);
  const asOfMs = wallToAppMs(current.as_of_ms, offsetMs);
  return (
    <p className="facts-now" title={`Read from Stripe ${formatFull(asOfMs)}${current.error ? `; the latest read failed: ${current.error}` : ''}`}>
      <span>
        {money(current.remaining)} left of {money(current.amount_received)} paid
      </span>{' '}
      <span className="muted">
        · {current.error ? 'last read ' : 'as of '}
        <time dateTime={isoOf(asOfMs)}>{formatMinute(asOfMs, appNowMs)}</time>
        {current.error && <span className="facts-error"> (Stripe could not be read since)</span>}
      </span>
    </p>
  );
}
