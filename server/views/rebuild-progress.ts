import type { RebuildReason } from './writer.ts';

/** How far the rebuild of the derived tables at start has come: what `/readyz` shows while it runs. */
export interface RebuildProgress {
  reason: RebuildReason;
  /** Journal entries folded so far. */
  entries: number;
  /** The journal's size when the rebuild began. */
  size: number;
  /** `entries` of `size`, rounded down to a tenth (100 for an empty journal). */
  percent: number;
  /** Seconds since the rebuild began, to the millisecond. */
  seconds: number;
}

/** Why the tables are rebuilt, as the log tells it. */
const WHY: Record<RebuildReason, string> = {
  missing: 'are missing (a journal written before them)',
  version: 'were written by another version of the views',
  ahead: "stand past the journal's head (tables of another journal, or a journal cut or restored under them)",
  foreign: "do not match the journal's seal at their cursor (tables of another journal, or rows rewritten)",
};

interface ProgressLog {
  info?(fields: object, message: string): void;
}

/**
 * One rebuild of the derived tables at start, while the views replay the journal: a line in the
 * log when it begins and when it ends (with its pace), and its progress meanwhile.
 */
export class TablesRebuild {
  readonly #reason: RebuildReason;
  readonly #size: number;
  readonly #entries: () => number;
  readonly #clockMs: () => number;
  readonly #startedMs: number;
  readonly #log: ProgressLog;

  constructor(options: { reason: RebuildReason; size: number; entries: () => number; log: ProgressLog; clockMs?: () => number }) {
    this.#reason = options.reason;
    this.#size = options.size;
    this.#entries = options.entries;
    this.#clockMs = options.clockMs ?? (() => performance.now());
    this.#startedMs = this.#clockMs();
    this.#log = options.log;
    this.#log.info?.(
      { event: 'views_rebuild_started', reason: this.#reason, size: this.#size },
      `the views' derived tables ${WHY[this.#reason]}: rebuilding them from the journal's ${this.#size} entries; /readyz answers 503 not_ready with the progress until done`,
    );
  }

  /** Where it stands now. */
  progress(): RebuildProgress {
    const entries = Math.min(this.#entries(), this.#size);
    const percent = this.#size === 0 ? 100 : Math.floor((entries / this.#size) * 1_000) / 10;
    return { reason: this.#reason, entries, size: this.#size, percent, seconds: this.#seconds() };
  }

  /** The rebuild is done: its line, with the entries folded a second. */
  done(): void {
    const entries = this.#entries();
    const seconds = this.#seconds();
    const pace = seconds > 0 ? Math.round(entries / seconds) : entries;
    this.#log.info?.(
      { event: 'views_rebuild_done', reason: this.#reason, entries, seconds, entriesPerSecond: pace },
      `rebuilt the views' derived tables from ${entries} journal entries in ${seconds.toFixed(2)} s (${pace} entries/s)`,
    );
  }

  #seconds(): number {
    return Math.round(this.#clockMs() - this.#startedMs) / 1_000;
  }
}

/** The rebuild of the derived tables at start: begun at most once, while the replay at start runs; none before and after. */
export class RebuildAtStart {
  #running: TablesRebuild | null = null;
  #done = false;

  /** True when a rebuild may begin: none ran and none runs. */
  get idle(): boolean {
    return this.#running === null && !this.#done;
  }

  /** True while a rebuild runs. */
  get running(): boolean {
    return this.#running !== null;
  }

  begin(options: ConstructorParameters<typeof TablesRebuild>[0]): void {
    this.#running = new TablesRebuild(options);
  }

  /** The replay at start held: the rebuild, if one ran, is done. */
  finish(): void {
    this.#running?.done();
    this.#done = true;
    this.#running = null;
  }

  /** The replay at start failed: no rebuild runs. */
  drop(): void {
    this.#running = null;
  }

  progress(): RebuildProgress | null {
    return this.#running?.progress() ?? null;
  }
}
