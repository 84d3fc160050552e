import { LEDGER_COLUMNS, LEDGER_CSV_COLUMNS, LEDGER_CSV_EXTRA_COLUMNS, LEDGER_LATER_COLUMNS, type LedgerCsvExtraColumn, type LedgerRow } from '../../shared/ledger.ts';
import { decimalOf } from '../../shared/money.ts';
import { assertNever } from '../../shared/statuses.ts';
import { csvCell, csvHeader, csvRecord, textCell } from '../csv/writer.ts';

/** One cell of any row field: numbers bare, null empty, lists as one text cell, items separated by "; " (a rule's name has spaces). */
function cell(value: LedgerRow[keyof LedgerRow]): string {
  return Array.isArray(value) ? textCell(value.join('; ')) : csvCell(value);
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
  return csvHeader(LEDGER_CSV_COLUMNS);
}

/** One row as one CSV record: its fields in the order of LEDGER_COLUMNS, the columns made from them, then the fields added later. */
export function ledgerCsvRecord(row: LedgerRow): string {
  const fields = LEDGER_COLUMNS.map((column) => cell(row[column]));
  const extras = LEDGER_CSV_EXTRA_COLUMNS.map((column) => extraCell(row, column));
  const later = LEDGER_LATER_COLUMNS.map((column) => cell(row[column]));
  return csvRecord([...fields, ...extras, ...later]);
}
