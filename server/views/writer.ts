import type { DerivedChange, DerivedCursor, DerivedTables } from '../../db/port/derived.ts';
import type { JournalHead, JournalStore } from '../journal/store.ts';

/** A view kept in a derived table: what it changed since the tables last took its changes. */
export interface DerivedSource {
  /**
   * Finish what needs reading before the changes can be told (chains folded again from the
   * journal). Called again when another process moved the cursor first, before the changes are
   * asked again and written from where it then stands.
   */
  settle(): Promise<void>;
  /** Every row changed since the last batch the tables took, as it stands now. */
  changes(): DerivedChange[];
  /**
   * The tables hold those changes now: forget them. `ours` is false when another process moved
   * the cursor past them first: what the tables hold may then be newer than what this view wrote.
   */
  written(ours?: boolean): void;
  /**
   * Read its open work from the tables, once they are opened with their cursor at `seq`, before
   * any entry past it is applied (0: the tables are rebuilt, nothing to read). Every view has
   * one, so none is written on without what it held: one that reads nothing at start says why.
   */
  load(seq: number): Promise<void>;
}

/**
 * Why the tables are rebuilt at start: none yet (a journal an earlier Interlock wrote), written by
 * another version of the folds, or not this journal's: their cursor is past the journal's head, or
 * the journal's seal at the cursor's seq is not the cursor's global hash (a database restored or
 * copied under them, rows rewritten).
 */
export type RebuildReason = 'missing' | 'version' | 'ahead' | 'foreign';

/**
 * What the writer reads of the journal to tell whether the tables are its own: its newest seq and
 * the seal at the cursor, never a count of its entries (which reads them all).
 */
export type JournalPosition = Pick<JournalStore, 'newestSeq' | 'sealAt'>;

/** What the tables were found to be at start: the reason to rebuild them (null: they are kept), and their cursor then. */
export interface TablesFound {
  reason: RebuildReason | null;
  cursor: DerivedCursor | null;
  /** The seq of the journal's newest entry then, 0 for an empty journal. */
  newestSeq: number;
}

/** The tables were reset (or moved under another version) while this writer wrote: nothing more is written. */
export class DerivedResetError extends Error {
  readonly code = 'derived_reset';
}

/**
 * Writes the views' derived tables: at the end of each page the follower applied, every view's
 * changes go in one batch that moves the tables' cursor from where this writer last saw it to the
 * follower's head. Another process may have moved the cursor first: when it is at or past the
 * head the batch is dropped (those entries are in); when it is between, the sources settle again
 * and their changes are applied from there (they are the rows at the head, and every key changed
 * after the cursor is among them). Nothing is written for an entry at or below the cursor.
 */
export class DerivedWriter {
  readonly #tables: DerivedTables;
  readonly #version: string;
  readonly #sources: readonly DerivedSource[];
  readonly #journal: JournalPosition;
  #seq = 0;
  /** The cursor the tables were kept at when opened; null when they were reset (or stood at 0). */
  #kept: JournalHead | null = null;
  #found: Promise<TablesFound> | null = null;
  #opened: Promise<RebuildReason | null> | null = null;

  constructor(tables: DerivedTables, version: string, sources: readonly DerivedSource[], journal: JournalPosition) {
    this.#tables = tables;
    this.#version = version;
    this.#sources = sources;
    this.#journal = journal;
  }

  /** Where the tables' cursor stands, as far as this writer knows: entries at or below it are in them. */
  get seq(): number {
    return this.#seq;
  }

  /** Where the tables stood when opened and kept (their cursor then, judged this journal's); null when reset or at 0. */
  get kept(): JournalHead | null {
    return this.#kept;
  }

  /**
   * Judge the tables against the journal, once, changing nothing: whether they must be rebuilt,
   * and why. Tables of an empty journal are reset with no reason told (there is nothing to fold).
   */
  find(): Promise<TablesFound> {
    this.#found ??= this.#find().catch((error: unknown) => {
      this.#found = null;
      throw error;
    });
    return this.#found;
  }

  async #find(): Promise<TablesFound> {
    const cursor = await this.#tables.cursor();
    const newestSeq = await this.#journal.newestSeq();
    return { reason: await this.#reasonFor(cursor, newestSeq), cursor, newestSeq };
  }

  async #reasonFor(cursor: DerivedCursor | null, newestSeq: number): Promise<RebuildReason | null> {
    if (cursor !== null && cursor.seq > newestSeq) return 'ahead';
    // An empty journal has nothing to fold: its tables are only laid under this version.
    if (newestSeq === 0) return null;
    if (cursor === null) return 'missing';
    if (cursor.version !== this.#version) return 'version';
    if (cursor.seq === 0) return null;
    return (await this.#journal.sealAt(cursor.seq)) === cursor.globalHash ? null : 'foreign';
  }

  /**
   * Open the tables, once, as `find` judged them: tables to rebuild (and those of an empty
   * journal, when not at 0 under this version) are reset to 0 under this version, to be rebuilt by
   * the replay (the reason is answered); kept ones are written on from their cursor.
   */
  open(): Promise<RebuildReason | null> {
    this.#opened ??= this.#open().catch((error: unknown) => {
      this.#opened = null;
      throw error;
    });
    return this.#opened;
  }

  async #open(): Promise<RebuildReason | null> {
    let { reason, cursor } = await this.find();
    if (reason !== null) {
      // Judged at start, a while ago maybe (a copy was taken, the server began to listen): another
      // process starting beside this one may have reset them under this version since, and be
      // building them. Such tables are kept, and caught up from their cursor, never reset again.
      const now = await this.#find();
      if (now.reason === null) ({ reason, cursor } = now);
    }
    if (reason === null && cursor !== null && cursor.version === this.#version) {
      this.#seq = cursor.seq;
      this.#kept = cursor.globalHash === null ? null : { seq: cursor.seq, globalHash: cursor.globalHash, size: cursor.size };
      await this.#load();
      return null;
    }
    await this.#tables.reset(this.#version);
    this.#seq = 0;
    await this.#load();
    return reason;
  }

  async #load(): Promise<void> {
    for (const source of this.#sources) await source.load(this.#seq);
  }

  /** Write every source's changes through `head` (the follower's, read after the sources settled). */
  async flush(head: () => JournalHead | null): Promise<void> {
    await this.open();
    for (const source of this.#sources) await source.settle();
    const to = head();
    if (to === null || to.seq <= this.#seq) return this.#written();
    let changes = this.#sources.flatMap((source) => source.changes());
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
        return this.#written(false);
      }
      fromSeq = cursor.seq;
      // A view whose rows move counts kept elsewhere (the scoreboard's totals) figures them again from where the cursor now stands.
      for (const source of this.#sources) await source.settle();
      changes = this.#sources.flatMap((source) => source.changes());
    }
  }

  #written(ours = true): void {
    for (const source of this.#sources) source.written(ours);
  }
}
