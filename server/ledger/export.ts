import { linkedEntryOfRow } from '../../db/journal-rules.ts';
import type { JournalFile } from '../../db/port/journal-file.ts';
import { openJournalFile } from '../../db/sqlite-journal-file.ts';
import type { LedgerRow } from '../../shared/ledger.ts';
import { type DisplayName, LedgerChain } from './chain.ts';
import type { LedgerFilter } from './filter.ts';

/** True for what a worker is handed to make an export. */
export function isExportRequest(value: unknown): value is ExportRequest {
  if (typeof value !== 'object' || value === null) return false;
  if (!('file' in value && 'inboxName' in value && 'filter' in value && 'displayNames' in value)) return false;
  const { file, inboxName, filter, displayNames } = value;
  return typeof file === 'string' && typeof inboxName === 'string' && typeof filter === 'object' && filter !== null && typeof displayNames === 'object' && displayNames !== null;
}

/** Open a read-only connection of its own on the journal file: a long read must never hold the server's connection. */
export function openLedgerReader(file: string): Promise<JournalFile> {
  if (file === '' || file === ':memory:') throw new Error('the ledger export reads the journal file, and this journal has none');
  return openJournalFile(file);
}

/**
 * Every ledger row in the store, newest request first, read with one streaming query (one
 * snapshot) and folded chain by chain with the same `LedgerChain` the views keep. Each entry is
 * checked as every journal read checks it (its hash, its shape, its columns, its link to the one
 * before), so a corrupt journal fails the export rather than appearing in it.
 */
export async function* ledgerRowsFromStore(reader: JournalFile, inboxName: string, displayName: DisplayName): AsyncGenerator<LedgerRow> {
  let headSeq = -1;
  let chain: LedgerChain | null = null;
  let skipping = false;
  let lastHash: string | null = null;
  for await (const batch of reader.chainsNewestFirst()) {
    for (const { head, row } of batch) {
      if (head !== headSeq) {
        const done = chain?.row(displayName) ?? null;
        if (done !== null) yield done;
        headSeq = head;
        chain = null;
        skipping = false;
        lastHash = null;
      } else if (skipping) continue; // not one of the inbox's requests: its other entries need no reading
      const entry = linkedEntryOfRow(row, lastHash);
      lastHash = entry.hash;
      if (chain !== null) chain.push(entry);
      else {
        chain = LedgerChain.start(entry, head, inboxName);
        skipping = chain === null;
      }
    }
  }
  const row = chain?.row(displayName) ?? null;
  if (row !== null) yield row;
}

/** What the worker making a CSV is given: the journal file, whose rows, and the people's display names. */
export interface ExportRequest {
  file: string;
  inboxName: string;
  filter: LedgerFilter;
  displayNames: Record<string, string>;
}

/** The server asks the worker for the next chunk. */
export type ToExport = { type: 'more' };
/** The worker answers with a chunk, the end, or why it stopped. */
export type FromExport =
  | { type: 'chunk'; text: string }
  | { type: 'end' }
  | { type: 'error'; message: string; corrupt: { seq: number; effectId: string } | null };
