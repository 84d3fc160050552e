import { cefLineId, cefLines } from './cef.ts';
import type { Destination, ExportUnit } from './destinations.ts';
import { exportLimits } from './limits.ts';
import { ndjsonLineId, ndjsonLines } from './ndjson.ts';
import { otlpLineIds, otlpRequest, otlpSpan } from './otlp.ts';
import { type ChainSource, type Period, readReceipts } from './read-journal.ts';
import { exportRecords, type ExportRecords } from './records.ts';
import { assertNever } from '../../shared/statuses.ts';
import type { SigningKey } from '../receipts/keys.ts';

/** The formats an export writes. */
export const EXPORT_FORMATS = ['otlp', 'cef', 'ndjson'] as const;
/** One export format. */
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

/** The units of one receipt in a format. */
export function unitsOf(format: ExportFormat, records: ExportRecords): ExportUnit[] {
  switch (format) {
    case 'ndjson':
      return ndjsonLines(records);
    case 'cef':
      return cefLines(records);
    case 'otlp': {
      const span = otlpSpan(records);
      return [{ id: records.receipt.id, line: JSON.stringify(otlpRequest([span])), span }];
    }
    default:
      return assertNever(format);
  }
}

/** The record ids one line of a file in this format holds, to skip them on the next export. */
export function lineIdsOf(format: ExportFormat): (line: string) => string[] {
  switch (format) {
    case 'ndjson':
      return (line) => [ndjsonLineId(line)].filter((id) => id !== null);
    case 'cef':
      return (line) => [cefLineId(line)].filter((id) => id !== null);
    case 'otlp':
      return otlpLineIds;
    default:
      return assertNever(format);
  }
}

/** What one export did. */
export interface ExportSummary {
  receipts: number;
  decisions: number;
  /** Records offered to the destination in this format (a receipt's OTLP span carries its decisions as events). */
  offered: number;
  /** Records written to the destination (the rest it already held). */
  written: number;
  /** Receipts that do not verify. */
  unverifiedCount: number;
  /** The first of them, by effect id, with why (the rows carry why for all). */
  unverified: { effectId: string; problems: string[] }[];
}

/** Export the receipts and decisions of a period from a journal to a destination, one receipt at a time. */
export async function exportPeriod(options: {
  /** The journal file's path, or a source of chains already open (the caller closes it). */
  journal: string | ChainSource;
  key: SigningKey;
  period: Period;
  format: ExportFormat;
  destination: Destination;
  /** Why the journal fails start-up's check, or null: then no receipt is exported as verified. */
  journalProblem?: string | null;
}): Promise<ExportSummary> {
  const summary: ExportSummary = { receipts: 0, decisions: 0, offered: 0, written: 0, unverifiedCount: 0, unverified: [] };
  try {
    for await (const read of readReceipts(options.journal, options.key, options.period, options.journalProblem ?? null)) {
      const records = exportRecords(read, options.period);
      summary.receipts += 1;
      summary.decisions += records.decisions.length;
      if (!records.receipt.verified) {
        summary.unverifiedCount += 1;
        if (summary.unverified.length < exportLimits.unverifiedNamedMax) summary.unverified.push({ effectId: read.effectId, problems: records.receipt.verify_problems });
      }
      for (const unit of unitsOf(options.format, records)) {
        summary.offered += 1;
        if (await options.destination.write(unit)) summary.written += 1;
      }
    }
    await options.destination.finish();
  } catch (error) {
    options.destination.abort();
    throw error;
  }
  return summary;
}
