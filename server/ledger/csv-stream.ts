import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { Worker, type WorkerOptions } from 'node:worker_threads';
import { JOURNAL_FILE_PACKAGES } from '../../db/sqlite-journal-file.ts';
import { limits } from '../../shared/limits.ts';
import { JournalCorruptError } from '../journal/store.ts';
import type { ExportRequest, FromExport, ToExport } from './export.ts';

/**
 * The export worker built ahead by `npm run build`: the compiled server (dist/server/main.js) finds
 * it beside itself, so production starts it from a file and needs no bundler at run time.
 */
const BUILT_WORKER = new URL('./export-worker.js', import.meta.url);
const workerIsBuilt = existsSync(BUILT_WORKER);

let workerCode: string | null = null;

/**
 * The export worker's code as one plain script, for the server run from its TypeScript sources
 * (`npm start`, tests): export-worker.ts and what it imports, bundled by esbuild once per process
 * (about 0.1 s), the storage's packages left to Node. Loaded through tsx instead, every worker compiled its
 * modules again and started 25 MiB heavier (36 MiB against 11). esbuild is a development
 * dependency, so it is loaded only here, never by the compiled server.
 */
export function exportWorkerCode(): string {
  if (workerCode !== null) return workerCode;
  const requireHere = createRequire(import.meta.url);
  const { buildSync }: typeof import('esbuild') = requireHere('esbuild');
  const built = buildSync({
    entryPoints: [fileURLToPath(new URL('./export-worker.ts', import.meta.url))],
    bundle: true,
    write: false,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    external: [...JOURNAL_FILE_PACKAGES],
    logLevel: 'silent',
  });
  // A warning (import.meta in a module the worker loads, say) would be a worker that fails at run time.
  if (built.warnings.length > 0 || built.outputFiles.length !== 1) {
    throw new Error(`the ledger export worker did not bundle cleanly: ${built.warnings.map((w) => w.text).join('; ')}`);
  }
  // The script runs as `node -e` would, with require resolving from the working folder: give it this module's.
  const nativeRequire = JSON.stringify(fileURLToPath(import.meta.url));
  workerCode = `(function (require) {\n${built.outputFiles[0]!.text}\n})(require('node:module').createRequire(${nativeRequire}));`;
  return workerCode;
}

/** A worker thread running export-worker: the built file when there is one, else the code bundled now. */
function startExportWorker(options: WorkerOptions): Worker {
  return workerIsBuilt ? new Worker(BUILT_WORKER, options) : new Worker(exportWorkerCode(), { ...options, eval: true });
}

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
export function ledgerCsvStream(request: ExportRequest & { onError: (error: unknown) => void; stallMs?: number }): Readable {
  const { onError, stallMs = limits.ledgerCsvStallMs, ...workerData } = request;
  const worker = startExportWorker({ workerData, resourceLimits: WORKER_HEAP });
  let waiting = false;
  // A client that stops reading holds a worker and one of the few download slots: once a chunk
  // waits for the client, stallMs with nothing taken stops the download. The time the worker
  // takes to make a chunk (a filter that matches little of a long journal) never counts.
  let stall: NodeJS.Timeout | null = null;
  const unwatch = () => {
    if (stall !== null) clearTimeout(stall);
    stall = null;
  };
  const watch = () => {
    unwatch();
    stall = setTimeout(() => fail(new Error(`the client read nothing of the ledger CSV for ${stallMs / 1000} s; the download was stopped`)), stallMs);
    stall.unref();
  };
  const stream = new Readable({
    read() {
      unwatch();
      if (waiting) return;
      waiting = true;
      worker.postMessage({ type: 'more' } satisfies ToExport);
    },
    destroy(error, callback) {
      unwatch();
      void worker.terminate();
      callback(error);
    },
  });
  stream.once('end', unwatch);
  const fail = (error: Error) => {
    if (stream.destroyed) return;
    onError(error);
    stream.destroy(error);
  };
  worker.on('message', (message: FromExport) => {
    waiting = false;
    if (message.type === 'chunk') {
      stream.push(message.text);
      watch();
    } else if (message.type === 'end') {
      stream.push(null);
      watch();
      void worker.terminate();
    } else fail(message.corrupt === null ? new Error(message.message) : new JournalCorruptError(message.message, message.corrupt));
  });
  worker.on('error', fail);
  worker.on('exit', (code) => {
    if (!stream.readableEnded && code !== 0 && code !== 1) fail(new Error(`the ledger export stopped (worker exit ${code})`));
  });
  return stream;
}
