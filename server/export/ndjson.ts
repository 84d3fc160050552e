import type { ExportRecords } from './records.ts';

// Newline-delimited JSON for a warehouse load: one object per line, the receipt's row then one
// row per decision of the period. Keys come in the order the record types declare them, every
// time, and values keep their types (cents and ms as numbers, flags as booleans, nothing as null).

/** The NDJSON lines of one receipt, each with its record id. */
export function ndjsonLines(records: ExportRecords): { id: string; line: string }[] {
  return [records.receipt, ...records.decisions].map((record) => ({ id: record.id, line: JSON.stringify(record) }));
}

/** The record id an NDJSON line carries. */
export function ndjsonLineId(text: string): string | null {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && 'id' in value && typeof value.id === 'string' ? value.id : null;
  } catch {
    return null;
  }
}
