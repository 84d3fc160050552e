import type { ViewRefold } from '../integrity/derived-check.ts';
import { LedgerChain } from './chain.ts';
import { asLogin, LEDGER_VIEW, tableRow } from './table.ts';

// The ledger's row of one chain, folded from the journal alone by the ledger's own fold: what its
// derived table must hold for that chain, for the background check of the tables (derived-check.ts).

/** The ledger's fold of a chain into its table row, for the requests of `inboxName`. */
export function ledgerRefold(inboxName: string): ViewRefold {
  return {
    view: LEDGER_VIEW,
    rowOf(chain) {
      const first = chain[0];
      const folded = first === undefined ? null : LedgerChain.start(first.entry, first.seq, inboxName);
      if (folded === null) return null;
      for (const { entry } of chain.slice(1)) folded.push(entry);
      const row = folded.row(asLogin);
      return row === null ? null : tableRow(row, folded.headSeq);
    },
  };
}
