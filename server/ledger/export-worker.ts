// The ledger CSV, made in a worker thread: it reads the journal file over its own read-only
// connection and hands the CSV to the server a chunk at a time, each when asked (see export.ts).
import { parentPort, workerData } from 'node:worker_threads';
import type { JournalFile } from '../../db/port/journal-file.ts';
import type { LedgerRow } from '../../shared/ledger.ts';
import { JournalCorruptError } from '../journal/store.ts';
import { ledgerCsvHeader, ledgerCsvRecord } from './csv.ts';
import { type ExportRequest, type FromExport, isExportRequest, ledgerRowsFromStore, openLedgerReader, type ToExport } from './export.ts';
import { rowMatches } from './filter.ts';

/** Text gathered before it is handed over: one socket-sized chunk. */
const CHUNK_CHARS = 64 * 1024;

const port = parentPort;
if (port === null) throw new Error('export-worker.ts runs as a worker thread');
if (!isExportRequest(workerData)) throw new Error('export-worker.ts was not given an export request');
const asked: ExportRequest = workerData;
// Opened at the first ask: this script runs as CommonJS, where nothing waits at the top.
let reader: JournalFile | null = null;
let rows: AsyncGenerator<LedgerRow> | null = null;
let header = true;

/** The next chunk of CSV, or null once every row was given. Works in this thread only, never the server's. */
async function nextChunk(): Promise<string | null> {
  if (rows === null) {
    reader = await openLedgerReader(asked.file);
    rows = ledgerRowsFromStore(reader, asked.inboxName, (login) => asked.displayNames[login] ?? login);
  }
  let out = header ? ledgerCsvHeader() : '';
  header = false;
  while (out.length < CHUNK_CHARS) {
    const next = await rows.next();
    if (next.done === true) return out.length > 0 ? out : null;
    if (rowMatches(next.value, asked.filter)) out += ledgerCsvRecord(next.value);
  }
  return out;
}

function answer(message: FromExport): void {
  port!.postMessage(message);
}

port.on('message', async (message: ToExport) => {
  if (message.type !== 'more') return;
  try {
    const text = await nextChunk();
    if (text !== null) return answer({ type: 'chunk', text });
    await reader?.close();
    answer({ type: 'end' });
  } catch (error) {
    const corrupt = error instanceof JournalCorruptError ? { seq: error.seq, effectId: error.effectId } : null;
    answer({ type: 'error', message: error instanceof Error ? error.message : String(error), corrupt });
  }
});
