import type { DerivedRow } from '../../db/port/derived.ts';
import type { JsonObject } from '../../shared/json.ts';
import type { LedgerRow } from '../../shared/ledger.ts';
import type { DisplayName } from './chain.ts';

// The ledger's derived table: one row per request, keyed by effect id, ordered by the seq of the
// request's first entry, its body the row as the fold gives it with logins for names (display
// names are the config's, applied at each read: table-read.ts). What a row holds is decided here.

/** The ledger's view name in the derived tables. */
export const LEDGER_VIEW = 'ledger';

/** A login shown as itself: how the table stores names. */
export const asLogin: DisplayName = (login) => login;

/** A row that can still change in the ordinary course: not settled, or sent and not yet confirmed for good. */
export function isOpenRow(row: LedgerRow): boolean {
  return row.outcome === 'open' || row.confirmation === 'unconfirmed' || row.confirmation === 'pending';
}

/** The table row of a request whose first entry is at `headSeq`, from its row folded with logins. */
export function tableRow(row: LedgerRow, headSeq: number): DerivedRow {
  const body: JsonObject = { ...row };
  return { key: row.effect_id, order: headSeq, open: isOpenRow(row), body };
}
