import type { LedgerCurrencyTotals, LedgerOutcome, LedgerOutcomeTotal, LedgerRow } from '../../shared/ledger.ts';

import { UNKNOWN_CURRENCY } from '../../shared/money.ts';

/** Totals over some rows, per currency; each row counts once, in its own currency. */
export interface TotalsFound {
  count: number;
  currencies: Record<string, LedgerCurrencyTotals>;
}

function emptyCurrency(): LedgerCurrencyTotals {
  const none = (): LedgerOutcomeTotal => ({ count: 0, asked_minor: 0 });
  // Every outcome spelled out: a new one in LEDGER_OUTCOMES does not compile until it is here.
  const byOutcome: Record<LedgerOutcome, LedgerOutcomeTotal> = { open: none(), refunded: none(), failed_at_stripe: none(), rejected: none(), repaired: none(), refused: none(), ambiguous: none(), closed: none() };
  return { count: 0, asked_minor: 0, sent_minor: 0, failed_minor: 0, by_outcome: byOutcome };
}

/**
 * Add up rows per currency: asked (every row, at the amount it asked for), sent (what Stripe
 * refunded: sent and not reported failed), failed (sent, then reported failed or canceled), and
 * each outcome's count and amount asked. Pure: the same rows give the same totals, in currency order.
 */
export function totalRows(rows: Iterable<LedgerRow>): TotalsFound {
  const adding = new TotalsAdder();
  for (const row of rows) adding.add(row);
  return adding.totals();
}

/** Totals added up one row at a time (`totalRows`), for rows read a page at a time. */
export class TotalsAdder {
  readonly #currencies: Record<string, LedgerCurrencyTotals> = {};
  #count = 0;

  add(row: LedgerRow): void {
    const key = row.currency ?? UNKNOWN_CURRENCY;
    const totals = this.#currencies[key] ?? emptyCurrency();
    this.#currencies[key] = totals;
    totals.count += 1;
    totals.asked_minor += row.amount_asked_minor;
    totals.sent_minor += row.amount_sent_minor ?? 0;
    totals.failed_minor += row.amount_failed_minor ?? 0;
    totals.by_outcome[row.outcome].count += 1;
    totals.by_outcome[row.outcome].asked_minor += row.amount_asked_minor;
    this.#count += 1;
  }

  /** The totals so far, in currency order. */
  totals(): TotalsFound {
    const currencies = this.#currencies;
    const sorted = Object.keys(currencies).sort();
    return { count: this.#count, currencies: Object.fromEntries(sorted.map((key) => [key, currencies[key]!])) };
  }
}
