import { createRequire } from 'node:module';
import { Readable } from 'node:stream';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
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

/**
 * The worker's first code: load export-worker.ts through tsx's own loader, as the server runs its
 * TypeScript, however this process was started (`node --import tsx`, vitest).
 */
const WORKER_BOOT = `import(${JSON.stringify(pathToFileURL(createRequire(import.meta.url).resolve('tsx/esm/api').replace(/\.cjs$/, '.mjs')).href)})
  .then(({ tsImport }) => tsImport(${JSON.stringify(new URL('./export-worker.ts', import.meta.url).href)}, ${JSON.stringify(import.meta.url)}))`;

/**
 * The worker's heap: everything it makes lives one chunk long, so a small young generation
 * collects it before it grows the process (the default one alone can take 48 MiB); the old
 * generation holds the loaded modules and one chain.
 */
const WORKER_HEAP = { maxYoungGenerationSizeMb: 8, maxOldGenerationSizeMb: 128 };

/**
 * The ledger as CSV, streamed with backpressure: a worker thread reads the store and makes the
 * CSV one chunk at a time, each only when the socket wants more. The server's own heap holds the
 * journal's views; rows read and dropped in it would be garbage V8 keeps in its old space (the
 * replay taught it these objects live long), so the reading happens in a heap of its own, and
 * the server's event loop never waits for it. Destroying the stream (a client that goes away)
 * stops the worker and its connection. `onError` hears a failure before the stream is destroyed.
 */
export function ledgerCsvStream(request: ExportRequest & { onError: (error: unknown) => void }): Readable {
  const { onError, ...workerData } = request;
  const worker = new Worker(WORKER_BOOT, { eval: true, workerData, resourceLimits: WORKER_HEAP });
  let waiting = false;
  const stream = new Readable({
    read() {
      if (waiting) return;
      waiting = true;
      worker.postMessage({ type: 'more' } satisfies ToExport);
    },
    destroy(error, callback) {
      void worker.terminate();
      callback(error);
    },
  });
  const fail = (error: Error) => {
    if (stream.destroyed) return;
    onError(error);
    stream.destroy(error);
  };
  worker.on('message', (message: FromExport) => {
    waiting = false;
    if (message.type === 'chunk') stream.push(message.text);
    else if (message.type === 'end') {
      stream.push(null);
      void worker.terminate();
    } else fail(message.corrupt === null ? new Error(message.message) : new JournalCorruptError(message.message, message.corrupt));
  });
  worker.on('error', fail);
  worker.on('exit', (code) => {
    if (!stream.readableEnded && code !== 0 && code !== 1) fail(new Error(`the ledger export stopped (worker exit ${code})`));
  });
  return stream;
}
