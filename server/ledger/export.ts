import Database from 'better-sqlite3';
import { entryRowOfTuple, linkedEntryOfRow } from '../../db/journal-rules.ts';
import type { LedgerRow } from '../../shared/ledger.ts';
import { JournalCorruptError } from '../journal/store.ts';
import { type DisplayName, LedgerChain } from './chain.ts';
import type { LedgerFilter } from './filter.ts';

/**
 * Every entry of every chain that starts with a PROPOSED, chain after chain, newest chain first
 * and each chain's entries in order. `CROSS JOIN` fixes the loop order SQLite must use (the chain
 * heads outside, walked backwards on the kind index; each chain's entries inside, on
 * (effect_id, seq)), so the rows come out already in this order and nothing is sorted or held:
 * memory stays one page of each b-tree, however big the journal.
 */
export const CHAINS_NEWEST_FIRST = `
  SELECT e.seq, e.effect_id, e.kind, e.prev, e.hash, e.closes, e.ts_ms, e.body, e.reserves, h.seq
  FROM entries AS h CROSS JOIN entries AS e ON e.effect_id = h.effect_id
  WHERE h.kind = 'PROPOSED' AND h.prev IS NULL
  ORDER BY h.seq DESC, e.seq ASC`;

/** True for what a worker is handed to make an export. */
export function isExportRequest(value: unknown): value is ExportRequest {
  if (typeof value !== 'object' || value === null) return false;
  if (!('file' in value && 'inboxName' in value && 'filter' in value && 'displayNames' in value)) return false;
  const { file, inboxName, filter, displayNames } = value;
  return typeof file === 'string' && typeof inboxName === 'string' && typeof filter === 'object' && filter !== null && typeof displayNames === 'object' && displayNames !== null;
}

/** Open a read-only connection of its own on the journal file: a long read must never hold the server's connection. */
export function openLedgerReader(file: string): Database.Database {
  if (file === '' || file === ':memory:') throw new Error('the ledger export reads the journal file, and this journal has none');
  const reader = new Database(file, { readonly: true, fileMustExist: true });
  reader.pragma('busy_timeout = 5000');
  return reader;
}

/**
 * Every ledger row in the store, newest request first, read with one streaming query (one
 * snapshot) and folded chain by chain with the same `LedgerChain` the views keep. Each entry is
 * checked as every journal read checks it (its hash, its shape, its columns, its link to the one
 * before), so a corrupt journal fails the export rather than appearing in it.
 */
export function* ledgerRowsFromStore(reader: Database.Database, inboxName: string, displayName: DisplayName): Generator<LedgerRow> {
  const statement = reader.prepare(CHAINS_NEWEST_FIRST).raw(true);
  let headSeq = -1;
  let chain: LedgerChain | null = null;
  let skipping = false;
  let lastHash: string | null = null;
  for (const tuple of statement.iterate()) {
    // An entries row, then its chain's head seq.
    if (!Array.isArray(tuple) || typeof tuple[9] !== 'number') throw new JournalCorruptError('a journal row has columns the schema does not allow', { seq: -1, effectId: '' });
    const head = tuple[9];
    const row = entryRowOfTuple(tuple.slice(0, 9));
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
