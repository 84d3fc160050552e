import { EMPTY_DIGEST, moveDigest } from '../derived-digest.ts';
import { checkedBatch, checkListOptions, compareRows, marksBetween, parsedBody } from '../derived-rules.ts';
import type { DerivedBatch, DerivedCursor, DerivedDigest, DerivedListOptions, DerivedRow, DerivedTables, DigestMark } from '../port/derived.ts';

const copy = <T>(value: T): T => structuredClone(value);

/** The derived tables in memory, for tests and the simulator: every user of one instance shares them. */
export class MemoryDerivedTables implements DerivedTables {
  #cursor: DerivedCursor | null = null;
  readonly #views = new Map<string, Map<string, DerivedRow>>();
  readonly #sums = new Map<string, { sum: string; rows: number }>();
  #marks: DigestMark[] = [];

  async cursor(): Promise<DerivedCursor | null> {
    return copy(this.#cursor);
  }

  async advance(batch: DerivedBatch): Promise<boolean> {
    const bodies = checkedBatch(batch);
    if ((this.#cursor?.seq ?? 0) !== batch.fromSeq) return false;
    for (const [i, change] of batch.changes.entries()) {
      const rows = this.#views.get(change.view) ?? new Map<string, DerivedRow>();
      this.#views.set(change.view, rows);
      const old = rows.get(change.key) ?? null;
      // The body as a store keeps it: its canonical JSON, read back.
      const body = bodies[i];
      const row = change.row === null || body === null || body === undefined ? null : { key: change.key, order: change.row.order, open: change.row.open, body: parsedBody(body) };
      if (row === null) rows.delete(change.key);
      else rows.set(change.key, row);
      const sum = this.#sums.get(change.view) ?? { sum: EMPTY_DIGEST, rows: 0 };
      this.#sums.set(change.view, { sum: moveDigest(sum.sum, row, old, change.view), rows: sum.rows + (row === null ? 0 : 1) - (old === null ? 0 : 1) });
    }
    const { seq, globalHash, size, version } = batch.to;
    this.#cursor = { seq, globalHash, size, version };
    if (marksBetween(batch.fromSeq, batch.to.seq)) this.#marks.push({ seq: batch.to.seq, globalHash: batch.to.globalHash, digests: await this.digests() });
    return true;
  }

  async reset(version: string): Promise<void> {
    this.#views.clear();
    this.#sums.clear();
    this.#marks = [];
    this.#cursor = { seq: 0, globalHash: null, size: 0, version };
  }

  async get(view: string, key: string): Promise<DerivedRow | null> {
    return copy(this.#views.get(view)?.get(key) ?? null);
  }

  async list(view: string, options: DerivedListOptions): Promise<DerivedRow[]> {
    checkListOptions(options);
    const sign = options.direction === 'asc' ? 1 : -1;
    const rows = [...(this.#views.get(view)?.values() ?? [])]
      .filter((row) => options.open === undefined || row.open === options.open)
      .filter((row) => options.after === undefined || sign * compareRows(row, options.after) > 0)
      .sort((a, b) => sign * compareRows(a, b));
    return copy(rows.slice(0, options.limit));
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

  /**
   * A copy of the tables as they stand, sharing nothing with them: every row, each view's sum and
   * row count, the marks and the cursor. What a file copied aside is to a store on disk.
   */
  clone(): MemoryDerivedTables {
    const copied = new MemoryDerivedTables();
    copied.#cursor = copy(this.#cursor);
    for (const [view, rows] of this.#views) copied.#views.set(view, copy(rows));
    for (const [view, sum] of this.#sums) copied.#sums.set(view, { ...sum });
    copied.#marks = copy(this.#marks);
    return copied;
  }
}
