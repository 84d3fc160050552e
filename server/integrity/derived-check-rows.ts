import { EMPTY_DIGEST } from '../../db/derived-digest.ts';
import type { DerivedDigest, DerivedSnapshot, DerivedTables } from '../../db/port/derived.ts';

// Every row of every derived table held against the digest its writes moved: the digests move
// only with `advance` (+new −old in the batch's transaction), so a row edited, added or removed
// under the store moves none, and the sum of the rows' hashes no longer is the view's digest.
// Read from one snapshot of the tables, a page at a time, while the server writes on; memory holds
// a page and one sum per view. Whatever the view: a chain's row, the board's totals, a wait count,
// an index of the outbox, a reload of the config, a row under a key that is no chain.

/** Rows read at once. */
const ROWS_PAGE = 200;

/** Digests are sums mod 2^256. */
const MODULUS = 1n << 256n;

/** A view whose rows do not sum to its digest. */
export interface RowsDisagree {
  view: string;
  /** The seq the snapshot's cursor stood at. */
  seq: number;
  recorded: DerivedDigest;
  summed: DerivedDigest;
}

export class RowsAgainstDigests {
  readonly #tables: Pick<DerivedTables, 'snapshot'>;
  #snapshot: DerivedSnapshot | null = null;
  /** Each view's sum as a number, reduced once at the end. */
  readonly #sums = new Map<string, { sum: bigint; rows: number }>();
  #finished = false;
  #seq = 0;
  #recorded: readonly DerivedDigest[] = [];

  constructor(tables: Pick<DerivedTables, 'snapshot'>) {
    this.#tables = tables;
  }

  get finished(): boolean {
    return this.#finished;
  }

  /** Read and sum rows while `more()` says the slice has time (one page at least): rows read are answered. */
  async step(more: () => boolean): Promise<number> {
    if (this.#finished) return 0;
    if (this.#snapshot === null) {
      this.#snapshot = await this.#tables.snapshot();
      this.#seq = this.#snapshot.cursor?.seq ?? 0;
      this.#recorded = this.#snapshot.digests;
    }
    let units = 0;
    do {
      const page = await this.#snapshot.next(ROWS_PAGE);
      if (page.length === 0) {
        this.close();
        this.#finished = true;
        return units;
      }
      for (const { view, hash } of page) {
        const sum = this.#sums.get(view);
        if (sum === undefined) this.#sums.set(view, { sum: hash, rows: 1 });
        else {
          sum.sum += hash;
          sum.rows += 1;
        }
      }
      units += page.length;
    } while (more());
    return units;
  }

  /** The first view (by name) whose rows do not sum to its digest, once every row was read; null when all agree. */
  disagreement(): RowsDisagree | null {
    const views = [...new Set([...this.#recorded.map(({ view }) => view), ...this.#sums.keys()])].sort();
    for (const view of views) {
      const recorded = this.#recorded.find((digest) => digest.view === view) ?? { view, sum: EMPTY_DIGEST, rows: 0 };
      const held = this.#sums.get(view) ?? { sum: 0n, rows: 0 };
      const summed = { view, sum: (held.sum % MODULUS).toString(16).padStart(64, '0'), rows: held.rows };
      if (recorded.sum !== summed.sum || recorded.rows !== summed.rows) return { view, seq: this.#seq, recorded, summed };
    }
    return null;
  }

  /** Let the snapshot go (a store on disk holds a read open until then). */
  close(): void {
    this.#snapshot?.close();
  }
}
