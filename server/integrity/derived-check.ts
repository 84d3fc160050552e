import { digestOfSum, EMPTY_DIGEST, rowHash } from '../../db/derived-digest.ts';
import { DIGEST_MARK_EVERY, type DerivedCursor, type DerivedRow, type DerivedTables, type DigestMark } from '../../db/port/derived.ts';
import type { Entry } from '../../shared/entries.ts';
import { JournalCorruptError, type JournalStore, type SealedEntry } from '../journal/store.ts';
import { RowsAgainstDigests } from './derived-check-rows.ts';

// The derived tables held against the journal in the background: the newest mark (the digests
// the tables recorded with their cursor at seq S) is recomputed from the journal alone, chain by
// chain, each chain cut at S and folded into its row by its view's own fold, the row's hash added
// to the view's running sum (rows a view keys otherwise, a reload by its seq, are each one chain's
// entries' too: `EntriesRefold`). Memory holds one chain, a page of chain ids and the sums. Each
// chain's row as the table holds it now must also be the chain folded through the tables' cursor
// (read before the rows of each slice), moved after S or not; a chain whose entries past that
// cursor the tables took before its row was read (written meanwhile) waits for the next pass. Then every row of every table,
// whatever its key, is summed from one snapshot of the tables and held against the digest its
// writes moved (derived-check-rows.ts): a row edited, added or removed under the server moved none,
// be it a chain's row, the board's totals, a wait count, an index or a reload. That sum needs no
// mark: it runs whenever the tables have a cursor. Tables whose cursor passed a multiple of 10,000
// entries always recorded a mark there, so a newest mark missing (marks deleted) is a difference
// too. A difference fails closed, as a damaged journal.

/** How one table-backed view's row is made from a chain: its own fold, so the next views plug in. */
export interface ViewRefold {
  /** The view's name in the derived tables. */
  readonly view: string;
  /** The row the view's table holds for a chain made of these entries (in order, with their seqs), or null when it holds none. */
  rowOf(chain: readonly { seq: number; entry: Entry }[]): DerivedRow | null;
}

/**
 * How rows a view keys otherwise than by their chain (a reload by its seq) are made from one chain:
 * every row its entries alone give. They are summed at the mark as chains' rows are.
 */
export interface EntriesRefold {
  readonly view: string;
  /** The rows the view's table holds for these entries of one chain (in order, with their seqs). */
  rowsOf(chain: readonly { seq: number; entry: Entry }[]): DerivedRow[];
}

/** A table that disagrees with the journal: the views stand failed until its tables are rebuilt and the server restarted. */
export class DerivedMismatchError extends JournalCorruptError {
  constructor(
    readonly view: string,
    at: { seq: number; effectId: string },
    readonly recorded: string,
    readonly recomputed: string,
    why: string,
  ) {
    super(`derived table ${view} disagrees with the journal at seq ${at.seq}: ${why}`, at);
  }
}

/** What a missing mark is named as, in the place of a view. */
export const MARKS = 'marks';

/** Chain ids read at once. */
const CHAIN_IDS_PAGE = 200;
/**
 * Chains read at once at most: their rows in the tables in one read, the chains in another. A slice
 * ends between batches, so a batch is sized by the pace of the one before to take `BATCH_MS`: a
 * slice runs over its fill (half of its 10 ms) by one batch at most.
 */
const CHAINS_BATCH = 16;
const BATCH_MS = 4;

/** A view's running sum of row hashes, reduced mod 2^256 once, when compared. */
interface Sum {
  sum: bigint;
  rows: number;
}

/**
 * One check of the derived tables at their newest mark, run a step at a time by the background
 * pass (server/integrity/whole-pass.ts) in its slices.
 */
export class DerivedCheck {
  readonly #journal: JournalStore;
  readonly #tables: Pick<DerivedTables, 'get' | 'storedHashes' | 'cursor' | 'newestMark'>;
  readonly #rows: RowsAgainstDigests;
  readonly #refolds: readonly ViewRefold[];
  readonly #entryRefolds: readonly EntriesRefold[];
  #mark: DigestMark | null = null;
  /** The mark the tables' cursor says was recorded but is not, found by `begin`. */
  #markMissing: { due: number; cursor: number } | null = null;
  readonly #sums = new Map<string, Sum>();
  #after = '';
  #waiting: string[] = [];
  #chainsDone = false;
  #finished = false;
  /** Chains the next batch reads, by the last one's pace. */
  #batchSize = 4;

  constructor(journal: JournalStore, tables: Pick<DerivedTables, 'get' | 'storedHashes' | 'cursor' | 'newestMark' | 'snapshot'>, refolds: readonly ViewRefold[], entryRefolds: readonly EntriesRefold[] = []) {
    this.#journal = journal;
    this.#tables = tables;
    this.#rows = new RowsAgainstDigests(tables);
    this.#refolds = refolds;
    this.#entryRefolds = entryRefolds;
  }

  /**
   * Take the tables' cursor and their newest mark; false when the tables were never built, and
   * nothing is checked. With no mark (fewer than 10,000 entries) only the rows are summed.
   */
  async begin(): Promise<boolean> {
    // The cursor first: the mark of the multiple it passed was recorded in the same transaction.
    const cursor = await this.#tables.cursor();
    this.#mark = await this.#tables.newestMark();
    for (const { view } of [...this.#refolds, ...this.#entryRefolds]) this.#sums.set(view, { sum: 0n, rows: 0 });
    this.#chainsDone = this.#mark === null;
    this.#finished = cursor === null || !(await this.#marksFound(cursor));
    return !this.#finished;
  }

  /** False when the tables were reset between the two reads (nothing to check); a missing mark is kept for `compare`. */
  async #marksFound(cursor: DerivedCursor): Promise<boolean> {
    const due = Math.floor(cursor.seq / DIGEST_MARK_EVERY) * DIGEST_MARK_EVERY;
    if (due === 0 || (this.#mark?.seq ?? 0) >= due) return true;
    // A reset removes the marks with the cursor: the cursor read again stands back then.
    const again = await this.#tables.cursor();
    if (again === null || again.seq < cursor.seq) return false;
    this.#markMissing = { due, cursor: cursor.seq };
    return true;
  }

  /** The seq of the mark checked, once `begin` found one; null when only the rows are summed. */
  get seq(): number | null {
    return this.#mark?.seq ?? null;
  }

  get finished(): boolean {
    return this.#finished;
  }

  /** Fold chains, one at a time, then sum the tables' rows, while `more()` says the slice has time: entries and rows read are answered. */
  async step(more: () => boolean): Promise<number> {
    if (this.#finished) return 0;
    const mark = this.#mark;
    if (mark === null || this.#chainsDone) {
      const units = await this.#rows.step(more);
      this.#finished = this.#rows.finished;
      return units;
    }
    if (this.#waiting.length === 0) this.#waiting = await this.#journal.chainIds(this.#after, CHAIN_IDS_PAGE);
    if (this.#waiting.length === 0) {
      this.#chainsDone = true;
      return 0;
    }
    let units = 0;
    while (this.#waiting.length > 0 && (units === 0 || more())) {
      const batch = this.#waiting.splice(0, this.#batchSize);
      const startMs = performance.now();
      units += await this.#batch(batch, mark.seq);
      const perChainMs = Math.max((performance.now() - startMs) / batch.length, 0.001);
      this.#batchSize = Math.max(1, Math.min(CHAINS_BATCH, Math.floor(BATCH_MS / perChainMs)));
      this.#after = batch.at(-1) ?? this.#after;
    }
    return units;
  }

  /**
   * A batch of chains: the tables' cursor read first, then the rows the batch's chains have in the
   * tables, then the chains themselves (the journal holds every entry the tables took by then),
   * then the cursor again. Each chain's rows as of `at` are added to the sums and the rows the
   * tables hold held against it. The entries read are answered.
   */
  async #batch(effectIds: readonly string[], at: number): Promise<number> {
    const before = await this.#tables.cursor();
    const stored = await this.#storedHashes(effectIds);
    const chains = await this.#sealedChains(effectIds);
    // The rows were read at a cursor between the two reads, unless the tables were reset meanwhile.
    const now = before === null ? null : await this.#tables.cursor();
    const between = before !== null && now !== null && now.seq >= before.seq ? { before, now } : null;
    let units = 0;
    for (const [i, effectId] of effectIds.entries()) {
      const read = chains[i] ?? [];
      units += read.length;
      this.#chain(effectId, read, stored[i] ?? [], at, between);
    }
    return units;
  }

  /**
   * Each view's recomputed digest against the mark's, then each view's rows against its digest in
   * the snapshot, then the mark the cursor says was recorded; throws DerivedMismatchError at the
   * first that differs.
   */
  compare(): void {
    this.close();
    if (this.#mark !== null) this.#againstMark(this.#mark);
    const rows = this.#rows.disagreement();
    if (rows !== null) {
      const { view, seq, recorded, summed } = rows;
      throw new DerivedMismatchError(view, { seq, effectId: 'unknown' }, recorded.sum, summed.sum, `its rows sum to ${summed.sum} over ${summed.rows} rows, the digest its writes moved is ${recorded.sum} over ${recorded.rows}`);
    }
    const missing = this.#markMissing;
    if (missing !== null) {
      const newest = this.#mark === null ? 'none is' : `the newest is at seq ${this.#mark.seq}`;
      throw new DerivedMismatchError(MARKS, { seq: missing.cursor, effectId: 'unknown' }, 'none', 'none', `the tables' cursor stands at seq ${missing.cursor}, so a mark was recorded at seq ${missing.due} or after, but ${newest}: marks were removed`);
    }
  }

  /** Each view's digest recomputed from the journal against the mark's. */
  #againstMark(mark: DigestMark): void {
    for (const { view } of [...this.#refolds, ...this.#entryRefolds]) {
      const recorded = mark.digests.find((digest) => digest.view === view) ?? { sum: EMPTY_DIGEST, rows: 0 };
      const held = this.#sums.get(view) ?? { sum: 0n, rows: 0 };
      const recomputed = { sum: digestOfSum(held.sum), rows: held.rows };
      if (recorded.sum !== recomputed.sum || recorded.rows !== recomputed.rows) {
        throw new DerivedMismatchError(view, { seq: mark.seq, effectId: 'unknown' }, recorded.sum, recomputed.sum, `the digest recorded there is ${recorded.sum} over ${recorded.rows} rows, the journal's ${recomputed.sum} over ${recomputed.rows}`);
      }
    }
  }

  /** Let go of what the check holds open (the tables' snapshot): when it is stopped before it finished. */
  close(): void {
    this.#rows.close();
  }

  /**
   * One chain, `read` after its rows' hashes `stored`: its rows as of `at` added to the sums, and
   * each row the table holds held against the chain folded through the tables' cursor `before`,
   * read before its rows (`now` read after them); with no `between` (tables never built, or reset
   * meanwhile) the rows are not held.
   */
  #chain(effectId: string, read: readonly SealedEntry[], stored: readonly (bigint | null)[], at: number, between: { before: DerivedCursor; now: DerivedCursor } | null): void {
    const cut = read.filter(({ seq }) => seq <= at);
    for (const refold of this.#entryRefolds) {
      for (const row of refold.rowsOf(cut)) this.#add(refold.view, rowHash(refold.view, row));
    }
    const marked = this.#refolds.map((refold) => (cut.length === 0 ? null : refold.rowOf(cut)));
    for (const [i, refold] of this.#refolds.entries()) {
      const row = marked[i] ?? null;
      if (row !== null) this.#add(refold.view, rowHash(refold.view, row));
    }
    if (between === null) return;
    // The rows were read at a cursor from `before` to `now`. A chain with no entry past `before`
    // had the same rows then. One with entries past it: with none of them taken by the tables by
    // `now` (the journal ahead of them) the rows are still the fold through `before`; with some
    // taken, the rows may be of either side, and the chain waits for the next pass (the sum of the
    // rows still holds its row against the digest).
    const { before, now } = between;
    if (read.some(({ seq }) => seq > before.seq && seq <= now.seq)) return;
    const through = read.filter(({ seq }) => seq <= before.seq);
    // A chain with nothing past the mark is found wrong at the mark, one that moved at the cursor.
    const still = through.length === cut.length;
    const where = still ? at : before.seq;
    for (const [i, refold] of this.#refolds.entries()) {
      const row = still ? (marked[i] ?? null) : refold.rowOf(through);
      const hash = row === null ? null : rowHash(refold.view, row);
      const heldHash = stored[i] ?? null;
      if (heldHash !== hash) {
        const hex = (value: bigint | null) => (value === null ? 'none' : value.toString(16).padStart(64, '0'));
        throw new DerivedMismatchError(refold.view, { seq: where, effectId }, hex(heldHash), hex(hash), `the row of ${effectId} hashes to ${hex(heldHash)} in the table, ${hex(hash)} from the journal through seq ${where}`);
      }
    }
  }

  /**
   * For each chain, the hash of the row each table-backed view holds for it now, null for none:
   * over its bytes as stored where the tables answer so in one read, else over the row `get` parses.
   */
  async #storedHashes(effectIds: readonly string[]): Promise<Array<Array<bigint | null>>> {
    const views = this.#refolds.map(({ view }) => view);
    if (this.#tables.storedHashes !== undefined) return this.#tables.storedHashes(views, effectIds);
    const hashes: Array<Array<bigint | null>> = [];
    for (const effectId of effectIds) {
      const rows = await Promise.all(views.map((view) => this.#tables.get(view, effectId)));
      hashes.push(rows.map((row, i) => (row === null ? null : rowHash(views[i] ?? '', row))));
    }
    return hashes;
  }

  /** The chains, read at once where the journal can. */
  async #sealedChains(effectIds: readonly string[]): Promise<SealedEntry[][]> {
    if (this.#journal.sealedChains !== undefined) return this.#journal.sealedChains(effectIds);
    const chains: SealedEntry[][] = [];
    for (const effectId of effectIds) chains.push(await this.#journal.sealedChain(effectId));
    return chains;
  }

  /** A row's hash added to its view's running sum. */
  #add(view: string, hash: bigint): void {
    const sum = this.#sums.get(view);
    if (sum === undefined) this.#sums.set(view, { sum: hash, rows: 1 });
    else {
      sum.sum += hash;
      sum.rows += 1;
    }
  }
}
