import { bytesHash, digestOfSum, storedRowBytes } from '../derived-digest.ts';
import { checkedBatch, checkListOptions, compareRows, heldSnapshot, marksBetween, parsedBody } from '../derived-rules.ts';
import type { JsonObject } from '../../shared/json.ts';
import { deepFreeze } from './frozen.ts';
import type { DerivedBatch, DerivedCursor, DerivedDigest, DerivedListOptions, DerivedRow, DerivedSnapshot, DerivedTables, DigestMark } from '../port/derived.ts';

/** A row as the tables keep it: its body as canonical JSON (what a store on disk holds). A kept row is never changed, only replaced. */
interface StoredRow {
  key: string;
  order: number;
  open: boolean;
  text: string;
}

/** Each kept row's body, parsed from its text at the first read and frozen: every read of the row answers it. */
const bodies = new WeakMap<StoredRow, JsonObject>();

/** A stored row as the port answers it: its body parsed from the text kept, frozen, so no reader can change what another reads. */
function rowOf(stored: StoredRow): DerivedRow {
  let body = bodies.get(stored);
  if (body === undefined) {
    body = deepFreeze(parsedBody(stored.text));
    bodies.set(stored, body);
  }
  return { key: stored.key, order: stored.order, open: stored.open, body };
}

/** Each kept row's hash, by the row (shared by a copy of the tables, whose rows are the same): a row replaced is dropped with it. */
const hashes = new WeakMap<StoredRow, bigint>();

const copyCursor = (cursor: DerivedCursor | null): DerivedCursor | null => (cursor === null ? null : { ...cursor });

/**
 * The derived tables in memory, for tests and the simulator: every user of one instance shares
 * them. Each row is kept as its canonical text, and every read parses a body of its own. The
 * digests are what a store on disk keeps moving by +new −old, figured only when asked: each
 * view's sum of the hashes of the rows it holds then, each row hashed once (a row written and
 * replaced before any digest is asked is never hashed, as most are in a run).
 */
export class MemoryDerivedTables implements DerivedTables {
  #cursor: DerivedCursor | null = null;
  readonly #views = new Map<string, Map<string, StoredRow>>();
  /** Each view's digest, figured at the first ask after the view changed. */
  readonly #digests = new Map<string, DerivedDigest>();
  /** Each view's rows in `order` then key, built at the first list after the view changed. */
  readonly #sorted = new Map<string, StoredRow[]>();
  #marks: DigestMark[] = [];

  async cursor(): Promise<DerivedCursor | null> {
    return copyCursor(this.#cursor);
  }

  async advance(batch: DerivedBatch): Promise<boolean> {
    const bodies = checkedBatch(batch);
    if ((this.#cursor?.seq ?? 0) !== batch.fromSeq) return false;
    for (const [i, change] of batch.changes.entries()) {
      let rows = this.#views.get(change.view);
      if (rows === undefined) {
        rows = new Map<string, StoredRow>();
        this.#views.set(change.view, rows);
      }
      this.#sorted.delete(change.view);
      this.#digests.delete(change.view);
      // The body as a store keeps it: its canonical JSON.
      const text = bodies[i];
      if (change.row === null || text === null || text === undefined) rows.delete(change.key);
      else rows.set(change.key, { key: change.key, order: change.row.order, open: change.row.open, text });
    }
    const { seq, globalHash, size, version } = batch.to;
    this.#cursor = { seq, globalHash, size, version };
    if (marksBetween(batch.fromSeq, batch.to.seq)) this.#marks.push({ seq: batch.to.seq, globalHash: batch.to.globalHash, digests: await this.digests() });
    return true;
  }

  async reset(version: string): Promise<void> {
    this.#views.clear();
    this.#sorted.clear();
    this.#digests.clear();
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
    const { before } = options;
    const out: DerivedRow[] = [];
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
    const out: DerivedDigest[] = [];
    for (const [view, rows] of this.#views) {
      if (rows.size === 0) continue;
      let digest = this.#digests.get(view);
      if (digest === undefined) {
        let sum = 0n;
        for (const row of rows.values()) sum += this.#hashOf(view, row);
        digest = { view, sum: digestOfSum(sum), rows: rows.size };
        this.#digests.set(view, digest);
      }
      out.push({ ...digest });
    }
    return out.sort((a, b) => (a.view < b.view ? -1 : 1));
  }

  #hashOf(view: string, row: StoredRow): bigint {
    let hash = hashes.get(row);
    if (hash === undefined) {
      hash = bytesHash(storedRowBytes(view, row.key, row.order, row.open, row.text));
      hashes.set(row, hash);
    }
    return hash;
  }

  async marks(): Promise<DigestMark[]> {
    return structuredClone(this.#marks);
  }

  async newestMark(): Promise<DigestMark | null> {
    return structuredClone(this.#marks.at(-1) ?? null);
  }

  /** Every row's hash as it stands now: the rows are in memory already. */
  async snapshot(): Promise<DerivedSnapshot> {
    const rows = [...this.#views].flatMap(([view, kept]) => [...kept.values()].map((row) => ({ view, key: row.key, hash: this.#hashOf(view, row) })));
    return heldSnapshot(copyCursor(this.#cursor), await this.digests(), rows);
  }

  /**
   * A copy of the tables as they stand, sharing nothing that can change with them: every row,
   * the marks and the cursor. What a file copied aside is to a store on disk. (A kept row is
   * never changed in place, only replaced, so rows are shared.)
   */
  clone(): MemoryDerivedTables {
    const copied = new MemoryDerivedTables();
    copied.#cursor = copyCursor(this.#cursor);
    for (const [view, rows] of this.#views) copied.#views.set(view, new Map(rows));
    copied.#marks = structuredClone(this.#marks);
    return copied;
  }
}
