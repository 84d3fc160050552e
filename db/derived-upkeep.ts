import { createRequire } from 'node:module';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import type Database from 'better-sqlite3';
import { connectionLock } from './connection.ts';

// The write-ahead log's checkpoints, put off while a catch-up writes many derived batches in a row.
// SQLite's default checkpoints the log into the database file at the commit that takes it past
// 1,000 pages: a batch of 1,000 entries dirties about 1,500 pages (every row lands in the table and
// three indexes, one keyed by random ids), so each batch's commit wrote its pages twice, to the log
// and then into the file, and synced both. While deferred, a commit writes and syncs the log
// alone; the log is checkpointed once after, on a connection of its own in a worker thread, in
// PASSIVE mode (it never waits for a reader, nor blocks one, nor holds up the event loop).

/** Pages SQLite lets the log reach before a commit checkpoints it: its default. */
export const WAL_AUTOCHECKPOINT_PAGES = 1_000;

/**
 * Pages the log may reach while checkpoints are put off (about 200 MB of 4 KiB pages): a start's
 * catch-up of 10,000 entries over a 10M-entry journal wrote about 26,500 (its ten batches, a page
 * written again by each batch that touches it), past the 25,000 once allowed, so its last commit
 * checkpointed them all on the event loop; a rebuild of the whole journal still checkpoints every
 * so often.
 */
export const DEFERRED_CHECKPOINT_PAGES = 50_000;

/**
 * Files whose checkpoints a connection of this process puts off now, by path, with how many
 * connections put them off. SQLite checkpoints at the commit of whichever connection takes the log
 * past its threshold: a lease renewed or a budget round written on a connection of its own right
 * after a start's catch-up copied the catch-up's whole log into the file there, 0.8 s with the
 * event loop held, before the server could answer. Those connections follow the deferral
 * (`followDeferral`).
 */
const deferredFiles = new Map<string, number>();
/** The threshold last set on each connection that follows the deferral. */
const followerPages = new WeakMap<Database.Database, number>();

const fileOf = (client: Database.Database): string => path.resolve(client.name);

/**
 * Before a write on another connection of this process to the journal's file (the budget's slots,
 * the leases): no checkpoint of its own while the file's are put off, SQLite's default else.
 */
export function followDeferral(client: Database.Database): void {
  if (client.memory || client.readonly) return;
  const pages = deferredFiles.has(fileOf(client)) ? 0 : WAL_AUTOCHECKPOINT_PAGES;
  if (followerPages.get(client) === pages) return;
  client.pragma(`wal_autocheckpoint = ${pages}`);
  followerPages.set(client, pages);
}

/** The driver's own file, for the worker to load as the server does (bundled or not, it is a package of node_modules). */
const DRIVER = createRequire(import.meta.url).resolve('better-sqlite3');

/** The worker: one PASSIVE checkpoint of the file's log on a connection of its own, then its result. */
const CHECKPOINT_WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.file, { fileMustExist: true });
try {
  db.pragma('busy_timeout = 5000');
  parentPort.postMessage(db.pragma('wal_checkpoint(PASSIVE)')[0]);
} finally {
  db.close();
}
`;

/** What a checkpoint reported: the log's frames, and how many of them are in the database file now. */
export interface CheckpointDone {
  busy: number;
  log: number;
  checkpointed: number;
}

/** One PASSIVE checkpoint of `file`'s log in a worker thread of its own, which never keeps the process alive. */
export function checkpointInWorker(file: string): Promise<CheckpointDone> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(CHECKPOINT_WORKER, { eval: true, workerData: { driver: DRIVER, file } });
    worker.unref();
    worker.once('message', (done: CheckpointDone) => resolve(done));
    worker.once('error', reject);
    worker.once('exit', (code) => reject(new Error(`the checkpoint's worker ended (${code}) before it answered`)));
  });
}

/**
 * Rows written while deferred below which no worker is started: about 1,700 pages at most, which
 * the connection's next commit checkpoints as it always did (a start with little to catch up, as
 * every start of the tests is, spares the worker's start).
 */
export const WORKER_AFTER_ROWS = 1_000;

/**
 * The checkpoint waits this long after a catch-up ends, so that the rest of a start (and a second
 * catch-up right behind the first, as start-up's check runs) goes first: the worker's own start
 * takes a few hundred ms of CPU.
 */
export const CHECKPOINT_DELAY_MS = 1_000;

/**
 * Checkpoints put off on one connection while catch-ups run, then done once: nested or overlapping
 * catch-ups, or one begun before the checkpoint after the last, share one deferral, and the
 * connection checkpoints on its own again (every 1,000 pages) once the checkpoint after the last of
 * them is done, or failed (the next commit then does it).
 */
export class DeferredCheckpoints {
  readonly #client: Database.Database;
  readonly #delayMs: number;
  #running = 0;
  /** Whether the connection's own checkpoints are put off now. */
  #deferred = false;
  #timer: NodeJS.Timeout | null = null;
  /** Settles the promise of a planned checkpoint that a new catch-up took over. */
  #dropPlanned: (() => void) | null = null;
  #after: Promise<void> = Promise.resolve();
  /** Rows the batches wrote since the checkpoints were put off. */
  #rows = 0;

  constructor(client: Database.Database, options: { delayMs?: number } = {}) {
    this.#client = client;
    this.#delayMs = options.delayMs ?? CHECKPOINT_DELAY_MS;
  }

  /** The checkpoint after the last catch-up, once it is done (at once when none is owed). */
  get settled(): Promise<void> {
    return this.#after;
  }

  /** Count rows a batch wrote: whether the log grew enough, by the end, for a checkpoint of its own. */
  wrote(rows: number): void {
    if (this.#deferred) this.#rows += rows;
  }

  /** Run `fn` with checkpoints put off; the checkpoint after it is planned, not awaited. */
  async run<T>(fn: () => Promise<T>): Promise<T> {
    // A file in memory has no log, and a read-only connection writes nothing.
    if (this.#client.memory || this.#client.readonly) return fn();
    this.#running += 1;
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    this.#dropPlanned?.();
    this.#dropPlanned = null;
    try {
      if (!this.#deferred) {
        this.#deferred = true;
        const file = fileOf(this.#client);
        deferredFiles.set(file, (deferredFiles.get(file) ?? 0) + 1);
        await this.#autocheckpoint(DEFERRED_CHECKPOINT_PAGES);
      }
      return await fn();
    } finally {
      this.#running -= 1;
      if (this.#running === 0) this.#after = this.#rows < WORKER_AFTER_ROWS ? this.#resume() : this.#later();
    }
  }

  /** The checkpoint once the delay passed with no catch-up begun meanwhile (a timer that never keeps the process alive). */
  #later(): Promise<void> {
    return new Promise<void>((resolve) => {
      this.#dropPlanned = resolve;
      this.#timer = setTimeout(() => {
        this.#timer = null;
        this.#dropPlanned = null;
        void this.#checkpoint().finally(resolve);
      }, this.#delayMs);
      this.#timer.unref();
    });
  }

  async #checkpoint(): Promise<void> {
    try {
      if (this.#client.open) await checkpointInWorker(this.#client.name);
    } catch {
      // Nothing is lost: the log holds every commit, and the connection's next commit checkpoints it.
    }
    if (this.#running > 0 || this.#timer !== null) return;
    await this.#resume();
  }

  /** The connection's own checkpoints again, as SQLite's default has them. */
  async #resume(): Promise<void> {
    if (this.#deferred) {
      const file = fileOf(this.#client);
      const others = (deferredFiles.get(file) ?? 1) - 1;
      if (others === 0) deferredFiles.delete(file);
      else deferredFiles.set(file, others);
    }
    this.#deferred = false;
    this.#rows = 0;
    await this.#autocheckpoint(WAL_AUTOCHECKPOINT_PAGES);
  }

  /** Set under the connection's lock, between two of its uses; a closed connection is left as it is. */
  #autocheckpoint(pages: number): Promise<void> {
    return connectionLock(this.#client).run(async () => {
      if (this.#client.open) this.#client.pragma(`wal_autocheckpoint = ${pages}`);
    });
  }
}
