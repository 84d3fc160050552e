import { Readable } from 'node:stream';
import type { LedgerRow } from '../../shared/ledger.ts';
import { ledgerCsvHeader, ledgerCsvRecord } from './csv.ts';

// The ledger CSV where the journal is no file a worker can open on its own (PostgreSQL): the same
// rows the JSON pages give, read page after page from the ledger's derived table, newest first,
// each page only when the socket wants more.

/** One page of the ledger's rows before `beforeSeq` (from the newest without one), and where the next page starts (null: none). */
export type LedgerPageRead = (beforeSeq: number | undefined) => Promise<{ rows: readonly LedgerRow[]; nextBeforeSeq: number | null }>;

/** The ledger as CSV (RFC 4180, formula-safe, as the worker makes it), streamed a page at a time from `read`. */
export function ledgerCsvFromPages(read: LedgerPageRead): Readable {
  async function* chunks(): AsyncGenerator<string> {
    yield ledgerCsvHeader();
    let beforeSeq: number | undefined;
    for (;;) {
      const page = await read(beforeSeq);
      if (page.rows.length > 0) yield page.rows.map(ledgerCsvRecord).join('');
      if (page.nextBeforeSeq === null) return;
      beforeSeq = page.nextBeforeSeq;
    }
  }
  return Readable.from(chunks(), { objectMode: false });
}
