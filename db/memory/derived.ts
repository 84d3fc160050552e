import { bytesHash, EMPTY_DIGEST, moveDigestBy, storedRowBytes } from '../derived-digest.ts';
import { checkedBatch, checkListOptions, compareRows, heldSnapshot, marksBetween, parsedBody } from '../derived-rules.ts';
import type { DerivedBatch, DerivedCursor, DerivedDigest, DerivedListOptions, DerivedRow, DerivedSnapshot, DerivedTables, DigestMark } from '../port/derived.ts';

const copy = <T>(value: T): T => structuredClone(value);

/** A row as the tables keep it: its body as canonical JSON (what a store on disk holds), and its hash in the digest. */
interface StoredRow {
  key: string;
  order: number;
  open: boolean;
  text: string;
  hash: bigint;
}

/** A stored row as the port answers it: a body of its own, parsed from the text kept. */
const rowOf = (stored: StoredRow): DerivedRow => ({ key: stored.key, order: stored.order, open: stored.open, body: parsedBody(stored.text) });

/**
 * The derived tables in memory, for tests and the simulator: every user of one instance shares
 * them. Each row is kept as its canonical text with its hash, so a change moves the digest by the
 * hash kept for the old row, and every read parses a body of its own.
 */
export class MemoryDerivedTables implements DerivedTables {
  #cursor: DerivedCursor | null = null;
  readonly #views = new Map<string, Map<string, StoredRow>>();
  readonly #sums = new Map<string, { sum: string; rows: number }>();
  /** Each view's rows in `order` then key, built at the first list after the view changed. */
  readonly #sorted = new Map<string, StoredRow[]>();
  #marks: DigestMark[] = [];

  async cursor(): Promise<DerivedCursor | null> {
    return copy(this.#cursor);
  }

  async advance(batch: DerivedBatch): Promise<boolean> {
    const bodies = checkedBatch(batch);
    if ((this.#cursor?.seq ?? 0) !== batch.fromSeq) return false;
    for (const [i, change] of batch.changes.entries()) {
      const rows = this.#views.get(change.view) ?? new Map<string, StoredRow>();
      this.#views.set(change.view, rows);
      this.#sorted.delete(change.view);
      const old = rows.get(change.key) ?? null;
      // The body as a store keeps it: its canonical JSON.
      const text = bodies[i];
      let row: StoredRow | null = null;
      if (change.row !== null && text !== null && text !== undefined) {
        const { order, open } = change.row;
        row = { key: change.key, order, open, text, hash: bytesHash(storedRowBytes(change.view, change.key, order, open, text)) };
      }
      if (row === null) rows.delete(change.key);
      else rows.set(change.key, row);
      const sum = this.#sums.get(change.view) ?? { sum: EMPTY_DIGEST, rows: 0 };
      this.#sums.set(change.view, { sum: moveDigestBy(sum.sum, row?.hash ?? null, old?.hash ?? null), rows: sum.rows + (row === null ? 0 : 1) - (old === null ? 0 : 1) });
    }
    const { seq, globalHash, size, version } = batch.to;
    this.#cursor = { seq, globalHash, size, version };
    if (marksBetween(batch.fromSeq, batch.to.seq)) this.#marks.push({ seq: batch.to.seq, globalHash: batch.to.globalHash, digests: await this.digests() });
    return true;
  }

  async reset(version: string): Promise<void> {
    this.#views.clear();
    this.#sorted.clear();
    this.#sums.clear();
    this.#marks = [];
    this.#cursor = { seq: 0, globalHash: null, size: 0, version };
  }

  async get(view: string, key: string): Promise<DerivedRow | null> {
    const stored = this.#views.get(view)?.get(key);
    return stored === undefined ? null : rowOf(stored);
  }

  async list(view: string, options: DerivedListOptions): Promise<DerivedRow[]> {
    checkListOptions(options);
    const sorted = this.#sortedRows(view);
    const asc = options.direction === 'asc';
    const { after } = options;
    // The first row past `after` in the direction: a binary search of the rows in order.
    let at = asc ? 0 : sorted.length - 1;
    if (after !== undefined) {
      let lo = 0;
      let hi = sorted.length;
      // asc: the first row above `after`; desc: the last row below it (the first not below, less one).
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        const cmp = compareRows(sorted[mid]!, after);
        if (asc ? cmp <= 0 : cmp < 0) lo = mid + 1;
        else hi = mid;
      }
      at = asc ? lo : lo - 1;
    }
    const out: DerivedRow[] = [];
    const { before } = options;
    for (let i = at; i >= 0 && i < sorted.length && out.length < options.limit; i += asc ? 1 : -1) {
      const stored = sorted[i]!;
      if (before !== undefined && (asc ? compareRows(stored, before) >= 0 : compareRows(stored, before) <= 0)) break;
      if (options.open === undefined || stored.open === options.open) out.push(rowOf(stored));
    }
    return out;
  }

  #sortedRows(view: string): StoredRow[] {
    let sorted = this.#sorted.get(view);
    if (sorted === undefined) {
      sorted = [...(this.#views.get(view)?.values() ?? [])].sort(compareRows);
      this.#sorted.set(view, sorted);
    }
    return sorted;
  }

  async digests(): Promise<DerivedDigest[]> {
    return [...this.#sums]
      .filter(([, sum]) => sum.rows > 0)
      .map(([view, sum]) => ({ view, sum: sum.sum, rows: sum.rows }))
      .sort((a, b) => (a.view < b.view ? -1 : 1));
  }

  async marks(): Promise<DigestMark[]> {
    return copy(this.#marks);
  }

  async newestMark(): Promise<DigestMark | null> {
    return copy(this.#marks.at(-1) ?? null);
  }

  /** Every row's hash as it stands now, kept with the row: the rows are in memory already. */
  async snapshot(): Promise<DerivedSnapshot> {
    const rows = [...this.#views].flatMap(([view, kept]) => [...kept.values()].map(({ key, hash }) => ({ view, key, hash })));
    return heldSnapshot(copy(this.#cursor), await this.digests(), rows);
  }

  /**
   * A copy of the tables as they stand, sharing nothing that can change with them: every row,
   * each view's sum and row count, the marks and the cursor. What a file copied aside is to a
   * store on disk. (A kept row is never changed in place, only replaced, so rows are shared.)
   */
  clone(): MemoryDerivedTables {
    const copied = new MemoryDerivedTables();
    copied.#cursor = copy(this.#cursor);
    for (const [view, rows] of this.#views) copied.#views.set(view, new Map(rows));
    for (const [view, sum] of this.#sums) copied.#sums.set(view, { ...sum });
    copied.#marks = copy(this.#marks);
    return copied;
  }
}
