import { EMPTY_DIGEST, moveDigest } from '../derived-digest.ts';
import {
  type DerivedBatch,
  type DerivedCursor,
  type DerivedDigest,
  type DerivedListOptions,
  type DerivedRow,
  type DerivedTables,
  DIGEST_MARK_EVERY,
  type DigestMark,
} from '../port/derived.ts';

const copy = <T>(value: T): T => structuredClone(value);

/** Rows ordered by `order`, then `key`: -1, 0 or 1. */
function compare(a: { order: number; key: string }, b: { order: number; key: string }): number {
  if (a.order !== b.order) return a.order < b.order ? -1 : 1;
  return a.key < b.key ? -1 : a.key > b.key ? 1 : 0;
}

/** True when a batch from `fromSeq` to `toSeq` reaches or passes a multiple of DIGEST_MARK_EVERY. */
export function marksBetween(fromSeq: number, toSeq: number): boolean {
  return Math.floor(toSeq / DIGEST_MARK_EVERY) > Math.floor(fromSeq / DIGEST_MARK_EVERY);
}

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
    if ((this.#cursor?.seq ?? 0) !== batch.fromSeq) return false;
    for (const change of batch.changes) {
      const rows = this.#views.get(change.view) ?? new Map<string, DerivedRow>();
      this.#views.set(change.view, rows);
      const old = rows.get(change.key) ?? null;
      const row = change.row === null ? null : copy(change.row);
      if (row !== null && row.key !== change.key) throw new RangeError(`a change of key ${change.key} carries a row of key ${row.key}`);
      if (row === null) rows.delete(change.key);
      else rows.set(change.key, row);
      const sum = this.#sums.get(change.view) ?? { sum: EMPTY_DIGEST, rows: 0 };
      this.#sums.set(change.view, { sum: moveDigest(sum.sum, row, old, change.view), rows: sum.rows + (row === null ? 0 : 1) - (old === null ? 0 : 1) });
    }
    this.#cursor = copy(batch.to);
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
    const sign = options.direction === 'asc' ? 1 : -1;
    const rows = [...(this.#views.get(view)?.values() ?? [])]
      .filter((row) => options.open === undefined || row.open === options.open)
      .filter((row) => options.after === undefined || sign * compare(row, options.after) > 0)
      .sort((a, b) => sign * compare(a, b));
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
}
