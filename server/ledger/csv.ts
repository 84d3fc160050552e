import { LEDGER_COLUMNS, type LedgerRow } from '../../shared/ledger.ts';

/** RFC 4180 ends every record with CRLF. */
const CRLF = '\r\n';

/**
 * Characters a spreadsheet reads as the start of a formula (or, for tab and CR, strips before
 * reading one): a text cell starting with one is prefixed with `'`, which spreadsheets show as
 * text and never evaluate. `-` is among them, so a request id like `-2+3` stays text.
 */
const FORMULA_START = /^[=+\-@\t\r]/;

/** One text cell: formula-safe, then quoted with inner quotes doubled (RFC 4180). */
export function textCell(value: string): string {
  const safe = FORMULA_START.test(value) ? `'${value}` : value;
  return `"${safe.replaceAll('"', '""')}"`;
}

/** One cell of any row field: numbers bare, null empty, lists as one text cell, items separated by "; " (a rule's name has spaces). */
function cell(value: LedgerRow[keyof LedgerRow]): string {
  if (value === null) return '';
  if (typeof value === 'number') return String(value);
  if (Array.isArray(value)) return textCell(value.join('; '));
  return textCell(value);
}

/** The header record. */
export function ledgerCsvHeader(): string {
  return `${LEDGER_COLUMNS.join(',')}${CRLF}`;
}

/** One row as one CSV record, its fields in the order of LEDGER_COLUMNS. */
export function ledgerCsvRecord(row: LedgerRow): string {
  return `${LEDGER_COLUMNS.map((column) => cell(row[column])).join(',')}${CRLF}`;
}
