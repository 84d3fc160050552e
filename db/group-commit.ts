/**
 * The bounds of group commit. A batch is one write transaction and so one fsync; the bounds keep
 * the write lock's hold, and the work redone when a batch fails, small.
 */
export const groupCommitLimits = {
  /** At most this many operations share one transaction; a full batch starts on the next setImmediate, lingering for nothing. */
  opsMax: 256,
  /** The longest a batch may wait for company before it starts, in ms (0: the next macrotask). */
  lingerMsMax: 2,
  /**
   * Under a stream of writes (one queued within this long of the last batch's commit), a batch
   * waits this long for company: a write that comes alone to a quiet journal commits at once, while
   * writes arriving one per turn of the loop share a batch instead of paying a commit (an fsync,
   * which holds the loop) each, which would leave the writers behind them waiting ever longer.
   */
  busyLingerMs: 2,
} as const;

/** How callers are grouped: both values within `groupCommitLimits`. */
export interface GroupCommitOptions {
  opsMax?: number;
  /**
   * How long every batch waits for company; unset, a batch starts on the next macrotask (after the
   * callers of the current one joined), or after `busyLingerMs` under a stream of writes.
   */
  lingerMs?: number;
  /** The wait under a stream of writes when `lingerMs` is unset (0: never wait). */
  busyLingerMs?: number;
  /**
   * How many callers of a committed batch are settled per turn of the loop, asked at each batch
   * (settleInChunks); unset, all of them at once.
   */
  settleChunk?: () => number;
}

/** What a backend gives the committer: one write transaction, and a step isolated inside it. */
export interface BatchStorage<Tx, Hint = undefined> {
  /**
   * Run `fn` holding the write lock; commit (durably) when it settles, roll back and rethrow if it
   * rejects. `hints` are those the batch's operations were submitted with, in order (none when an
   * operation runs again alone): what a backend may read for all of them at once under the lock.
   */
  transaction<T>(fn: (tx: Tx) => Promise<T>, hints?: readonly (Hint | undefined)[]): Promise<T>;
  /** Run `fn` inside the open transaction (a savepoint) so that if it rejects, only what `fn` wrote is undone. */
  isolated<T>(tx: Tx, fn: (tx: Tx) => Promise<T>): Promise<T>;
  /**
   * False when a failed transaction may have committed after all (a server's connection lost during
   * COMMIT): its operations must not run again, which could write them twice. Unset, every failure
   * is a rollback (SQLite's COMMIT either is durable or fails having written nothing).
   */
  mayRunAgain?(error: unknown): boolean;
}

/** What the committer has done since it was made. */
export interface GroupCommitStats {
  batches: number;
  ops: number;
  largestBatch: number;
  /** Batches whose transaction failed after their operations ran, so each of them ran again on its own. */
  retriedBatches: number;
  /**
   * Batches whose transaction could not begin (the write lock stayed taken): no operation of theirs
   * ran, so each was refused with that error at once, rather than waiting for the lock once more per
   * operation.
   */
  refusedBatches: number;
  /** The longest an operation waited between being queued and its batch starting, in ms. */
  waitMsMax: number;
  /**
   * Batches whose commit may or may not have happened (mayRunAgain said no): each operation was
   * refused with the error, for its caller to read the journal again, and none ran again.
   */
  unknownBatches: number;
}

/** Resolves a caller's promise with the result its operation gave; called once the batch committed. */
type Resolve = () => void;

type Outcome = { ok: true; resolve: Resolve } | { ok: false; error: unknown };

interface Queued<Tx, Hint> {
  /** Runs the operation and holds its result for the caller, each caller's own type kept by the closure. */
  run: (tx: Tx) => Promise<Resolve>;
  /** What the operation will read under the lock, told to the backend with its batch. */
  hint: Hint | undefined;
  queuedAtMs: number;
  reject: (error: unknown) => void;
}

async function attempt(fn: () => Promise<Resolve>): Promise<Outcome> {
  try {
    return { ok: true, resolve: await fn() };
  } catch (error) {
    return { ok: false, error };
  }
}

/**
 * Group commit: writes from concurrent callers of one process are queued and run together, in
 * the order they were queued, in one transaction (one fsync). Each operation runs isolated inside
 * it, so it sees every earlier operation of its batch, and one that throws is undone and rejected
 * alone. No promise settles before its batch has committed; if the batch's transaction fails,
 * nothing of it was written and every operation runs again in a transaction of its own (or, when
 * the transaction could not even begin, is refused with its error).
 *
 * A flush starts only at the top of a turn of the event loop (a timer or setImmediate), never
 * inside a caller's code, and its callers are settled only once its last transaction closed. So
 * when the backend's steps answer at once (SQLite), no code of the process but the batch's own
 * runs while its transaction is open: nothing else can run a statement inside it.
 */
export class GroupCommit<Tx, Hint = undefined> {
  readonly #storage: BatchStorage<Tx, Hint>;
  readonly #opsMax: number;
  readonly #lingerMs: number | null;
  readonly #busyLingerMs: number;
  readonly #settleChunk: () => number;
  /** When the last batch committed (performance.now()); far in the past before the first. */
  #committedAtMs = Number.NEGATIVE_INFINITY;
  #queue: Queued<Tx, Hint>[] = [];
  /** Callers of committed batches not yet settled, in commit order (settleInChunks drains it). */
  readonly #unsettled: (() => void)[] = [];
  #scheduled = false;
  #flushing = false;
  /** A settling in pieces is under way (settleInChunks has callers left to settle). */
  #settling = false;
  readonly #stats: GroupCommitStats = { batches: 0, ops: 0, largestBatch: 0, retriedBatches: 0, refusedBatches: 0, waitMsMax: 0, unknownBatches: 0 };

  constructor(storage: BatchStorage<Tx, Hint>, options: GroupCommitOptions = {}) {
    const opsMax = options.opsMax ?? groupCommitLimits.opsMax;
    const lingerMs = options.lingerMs ?? null;
    const busyLingerMs = options.busyLingerMs ?? groupCommitLimits.busyLingerMs;
    if (!Number.isSafeInteger(opsMax) || opsMax < 1 || opsMax > groupCommitLimits.opsMax) {
      throw new RangeError(`opsMax must be an integer from 1 to ${groupCommitLimits.opsMax}: ${opsMax}`);
    }
    for (const [name, ms] of [['lingerMs', lingerMs ?? 0], ['busyLingerMs', busyLingerMs]] as const) {
      if (!Number.isFinite(ms) || ms < 0 || ms > groupCommitLimits.lingerMsMax) {
        throw new RangeError(`${name} must be from 0 to ${groupCommitLimits.lingerMsMax}: ${ms}`);
      }
    }
    this.#storage = storage;
    this.#opsMax = opsMax;
    this.#lingerMs = lingerMs;
    this.#busyLingerMs = busyLingerMs;
    this.#settleChunk = options.settleChunk ?? (() => Number.POSITIVE_INFINITY);
  }

  /** A copy of the counters. */
  get stats(): GroupCommitStats {
    return { ...this.#stats };
  }

  /** Operations waiting for their batch. */
  get pending(): number {
    return this.#queue.length;
  }

  /** Queue `run` for the next batch; the promise settles with its result once that batch committed. */
  submit<T>(run: (tx: Tx) => Promise<T>, hint?: Hint): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#queue.push({
        run: async (tx) => {
          const value = await run(tx);
          return () => resolve(value);
        },
        hint,
        queuedAtMs: performance.now(),
        reject,
      });
      this.#schedule();
    });
  }

  #schedule(): void {
    if (this.#scheduled || this.#queue.length === 0) return;
    this.#scheduled = true;
    const start = () => {
      this.#scheduled = false;
      void this.#flush();
    };
    // setImmediate runs after the I/O callbacks and microtasks of this turn of the loop, so every
    // caller that is ready now joins the batch; it is not unref'd, since a caller awaits it. A full
    // batch waits for nothing more. Since a flush settles its callers only when it ends, callers
    // that write again the moment they are settled queue for the next flush, in a later turn: the
    // loop polls its sockets and runs its timers between one flush and the next.
    const full = this.#queue.length >= this.#opsMax;
    const lingerMs = full ? 0 : (this.#lingerMs ?? (performance.now() - this.#committedAtMs <= this.#busyLingerMs ? this.#busyLingerMs : 0));
    if (lingerMs === 0) setImmediate(start);
    else setTimeout(start, lingerMs);
  }

  /**
   * Commit the operations queued when it starts, in batches of at most `opsMax`, then settle their
   * callers. Operations queued meanwhile (by another operation's run, or by a backend's callbacks
   * that answer later) wait for the next flush.
   */
  async #flush(): Promise<void> {
    if (this.#flushing) return;
    this.#flushing = true;
    try {
      for (let left = this.#queue.length; left > 0; ) {
        const batch = this.#queue.splice(0, Math.min(left, this.#opsMax));
        left -= batch.length;
        await this.#commit(batch);
      }
    } finally {
      this.#flushing = false;
    }
    this.#settle();
    this.#schedule();
  }

  async #commit(batch: Queued<Tx, Hint>[]): Promise<void> {
    const startedMs = performance.now();
    let outcomes: Outcome[] = [];
    let began = false;
    try {
      await this.#storage.transaction(async (tx) => {
        began = true;
        outcomes = [];
        for (const op of batch) {
          try {
            outcomes.push({ ok: true, resolve: await this.#storage.isolated(tx, op.run) });
          } catch (error) {
            outcomes.push({ ok: false, error });
          }
        }
      }, batch.map((op) => op.hint));
    } catch (error) {
      if (!began) {
        // The transaction never began: nothing ran, and a transaction of each operation's own would
        // only wait for the same lock again, once per operation. Each is refused with the error.
        this.#stats.refusedBatches += 1;
        outcomes = batch.map(() => ({ ok: false, error }));
      } else if (this.#storage.mayRunAgain?.(error) === false) {
        // The batch may be in the journal already: running it again could write it twice.
        this.#stats.unknownBatches += 1;
        outcomes = batch.map(() => ({ ok: false, error }));
      } else {
        // The transaction rolled back (or its commit failed), so none of the batch is written, even
        // the operations that succeeded inside it: each gets a transaction of its own, or its error.
        this.#stats.retriedBatches += 1;
        outcomes = [];
        for (const op of batch) outcomes.push(await attempt(() => this.#storage.transaction(op.run)));
      }
    }
    const stats = this.#stats;
    stats.batches += 1;
    stats.ops += batch.length;
    stats.largestBatch = Math.max(stats.largestBatch, batch.length);
    stats.waitMsMax = Math.max(stats.waitMsMax, startedMs - batch[0]!.queuedAtMs);
    this.#committedAtMs = performance.now();
    // One queue for every batch: a batch committed while an earlier one is still being settled in
    // pieces waits behind it, so callers go on in the order their writes committed.
    for (const [i, op] of batch.entries()) {
      const outcome = outcomes[i]!;
      this.#unsettled.push(outcome.ok ? outcome.resolve : () => op.reject(outcome.error));
    }
  }

  /** Start settling the committed callers, unless a settling in pieces is already under way (it takes them too). */
  #settle(): void {
    if (this.#settling || this.#unsettled.length === 0) return;
    this.#settling = true;
    settleInChunks(this.#unsettled, Math.max(1, this.#settleChunk()), () => {
      this.#settling = false;
    });
  }
}

/**
 * Settle a committed batch's callers `chunk` at a time, the loop polling its sockets between each
 * few. Each caller's continuation (its next read, its Stripe call, its answer) runs as a microtask
 * of the turn that settles it, so settling a whole batch at once makes one long turn of every
 * continuation, and a request needing only a quick answer (a 429 under overload, /healthz) waits
 * for all of them (`npm run bench -- --only overload` measures it). The order is the array's (callers
 * pushed onto it meanwhile are settled after the earlier ones), and nothing settles before its batch
 * committed.
 */
export function settleInChunks(settles: (() => void)[], chunk: number, done?: () => void): void {
  for (const settle of settles.splice(0, chunk)) settle();
  if (settles.length > 0) setImmediate(() => settleInChunks(settles, chunk, done));
  else done?.();
}
