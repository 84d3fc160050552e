import { LEDGER_COLUMNS, LEDGER_CSV_COLUMNS, LEDGER_CSV_EXTRA_COLUMNS, LEDGER_LATER_COLUMNS, type LedgerCsvExtraColumn, type LedgerRow } from '../../shared/ledger.ts';
import { decimalOf } from '../../shared/money.ts';
import { assertNever } from '../../shared/statuses.ts';

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

/** A time as ISO-8601 UTC, empty when there is none. */
function isoCell(ms: number | null): string {
  return ms === null ? '' : new Date(ms).toISOString();
}

/** An amount as a decimal in its currency's exponent, bare; empty when there is none or the currency is not known. */
function decimalCell(minorUnits: number | null, currency: string | null): string {
  return minorUnits === null || currency === null ? '' : decimalOf(minorUnits, currency);
}

/** One of the columns made for a spreadsheet from a row's fields. */
function extraCell(row: LedgerRow, column: LedgerCsvExtraColumn): string {
  switch (column) {
    case 'requested_at':
      return isoCell(row.requested_at_ms);
    case 'decided_at':
      return isoCell(row.decided_at_ms);
    case 'amount_asked':
      return decimalCell(row.amount_asked_minor, row.currency);
    case 'amount_sent':
      return decimalCell(row.amount_sent_minor, row.currency);
    case 'amount_failed':
      return decimalCell(row.amount_failed_minor, row.currency);
    default:
      return assertNever(column);
  }
}

/** The header record. */
export function ledgerCsvHeader(): string {
  return `${LEDGER_CSV_COLUMNS.join(',')}${CRLF}`;
}

/** One row as one CSV record: its fields in the order of LEDGER_COLUMNS, the columns made from them, then the fields added later. */
export function ledgerCsvRecord(row: LedgerRow): string {
  const fields = LEDGER_COLUMNS.map((column) => cell(row[column]));
  const extras = LEDGER_CSV_EXTRA_COLUMNS.map((column) => extraCell(row, column));
  const later = LEDGER_LATER_COLUMNS.map((column) => cell(row[column]));
  return `${[...fields, ...extras, ...later].join(',')}${CRLF}`;
}
