import type { DerivedChange, DerivedTables } from '../../db/port/derived.ts';
import type { JournalHead } from '../journal/store.ts';

/** A view kept in a derived table: what it changed since the tables last took its changes. */
export interface DerivedSource {
  /** Finish what needs reading before the changes can be told (chains folded again from the journal). */
  settle(): Promise<void>;
  /** Every row changed since the last batch the tables took, as it stands now. */
  changes(): DerivedChange[];
  /** The tables hold those changes now (written, or written by another process): forget them. */
  written(): void;
}

/** Why the tables were rebuilt at start: none yet, or written by another version of the folds. */
export type RebuildReason = 'missing' | 'version';

/** The tables were reset (or moved under another version) while this writer wrote: nothing more is written. */
export class DerivedResetError extends Error {
  readonly code = 'derived_reset';
}

/**
 * Writes the views' derived tables: at the end of each page the follower applied, every view's
 * changes go in one batch that moves the tables' cursor from where this writer last saw it to the
 * follower's head. Another process may have moved the cursor first: when it is at or past the
 * head the batch is dropped (those entries are in); when it is between, the same changes are
 * applied from there (they are the rows at the head, and every key changed after the cursor is
 * among them). Nothing is written for an entry at or below the cursor.
 */
export class DerivedWriter {
  readonly #tables: DerivedTables;
  readonly #version: string;
  readonly #sources: readonly DerivedSource[];
  #seq = 0;
  #opened: Promise<RebuildReason | null> | null = null;

  constructor(tables: DerivedTables, version: string, sources: readonly DerivedSource[]) {
    this.#tables = tables;
    this.#version = version;
    this.#sources = sources;
  }

  /** Where the tables' cursor stands, as far as this writer knows: entries at or below it are in them. */
  get seq(): number {
    return this.#seq;
  }

  /**
   * Read the tables' cursor, once: tables never built, or built by another version of the folds,
   * are reset to 0 under this version, to be rebuilt by the replay (the reason is answered).
   */
  open(): Promise<RebuildReason | null> {
    this.#opened ??= this.#open().catch((error: unknown) => {
      this.#opened = null;
      throw error;
    });
    return this.#opened;
  }

  async #open(): Promise<RebuildReason | null> {
    const cursor = await this.#tables.cursor();
    if (cursor !== null && cursor.version === this.#version) {
      this.#seq = cursor.seq;
      return null;
    }
    await this.#tables.reset(this.#version);
    this.#seq = 0;
    return cursor === null ? 'missing' : 'version';
  }

  /** Write every source's changes through `head` (the follower's, read after the sources settled). */
  async flush(head: () => JournalHead | null): Promise<void> {
    await this.open();
    for (const source of this.#sources) await source.settle();
    const to = head();
    if (to === null || to.seq <= this.#seq) return this.#written();
    const changes = this.#sources.flatMap((source) => source.changes());
    let fromSeq = this.#seq;
    for (;;) {
      const batch = { fromSeq, to: { seq: to.seq, globalHash: to.globalHash, size: to.size, version: this.#version }, changes };
      if (await this.#tables.advance(batch)) {
        this.#seq = to.seq;
        return this.#written();
      }
      const cursor = await this.#tables.cursor();
      if (cursor === null || cursor.version !== this.#version || cursor.seq < this.#seq) {
        const found = cursor === null ? 'to nothing' : `to seq ${cursor.seq} under version ${cursor.version}`;
        throw new DerivedResetError(`the derived tables were reset ${found} while this server writes version ${this.#version} past seq ${this.#seq}; restart it`);
      }
      if (cursor.seq >= to.seq) {
        this.#seq = cursor.seq;
        return this.#written();
      }
      fromSeq = cursor.seq;
    }
  }

  #written(): void {
    for (const source of this.#sources) source.written();
  }
}
