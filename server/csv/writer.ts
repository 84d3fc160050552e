/**
 * The one CSV writer every download uses (the ledger, the scoreboard): RFC 4180 records ended by
 * CRLF, text cells quoted with inner quotes doubled, and no text cell a spreadsheet would run as a
 * formula.
 */

/** RFC 4180 ends every record with CRLF. */
export const CRLF = '\r\n';

/**
 * Characters a spreadsheet reads as the start of a formula (or, for tab and CR, strips before
 * reading one): a text cell starting with one is prefixed with `'`, which spreadsheets show as
 * text and never evaluate. `-` is among them, so a request id like `-2+3` stays text.
 */
const FORMULA_START = /^[=+\-@\t\r]/;

/** A header name: written bare, so only our own plain names may be one. */
const HEADER_NAME = /^[a-z][a-z0-9_.]*$/;

/** One text cell: formula-safe, then quoted with inner quotes doubled (RFC 4180). */
export function textCell(value: string): string {
  const safe = FORMULA_START.test(value) ? `'${value}` : value;
  return `"${safe.replaceAll('"', '""')}"`;
}

/** One cell of a plain value: a number bare, null empty, text as a text cell. */
export function csvCell(value: string | number | null): string {
  if (value === null) return '';
  if (typeof value === 'number') return String(value);
  return textCell(value);
}

/** One record of cells already written (by `csvCell`, `textCell`, or bare figures such as ISO times and decimals). */
export function csvRecord(cells: readonly string[]): string {
  return `${cells.join(',')}${CRLF}`;
}

/** The header record: the column names, bare. */
export function csvHeader(names: readonly string[]): string {
  for (const name of names) if (!HEADER_NAME.test(name)) throw new Error(`a CSV column name must be a plain name: ${JSON.stringify(name)}`);
  return csvRecord(names);
}
