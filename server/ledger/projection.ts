import type { Entry } from '../../shared/entries.ts';
import type { LedgerRow } from '../../shared/ledger.ts';
import { type DisplayName, LedgerChain } from './chain.ts';
import { type LedgerFilter, rowMatches } from './filter.ts';
import { type TotalsFound, totalRows } from './totals.ts';

/** A page asked of the ledger: rows of requests made before `beforeSeq` (all when absent), at most `limit`. */
export interface PageRequest {
  beforeSeq?: number;
  limit: number;
}

/** A page: its rows, newest first, and where the next page starts (null when nothing matches past it). */
export interface PageFound {
  rows: LedgerRow[];
  nextBeforeSeq: number | null;
}

/**
 * The whole ledger folded in memory: one `LedgerChain` per request of the inbox, in the order the
 * requests were first written, fed every entry of the journal in order. It never reads the journal
 * itself. The views keep the ledger in its derived table instead (view.ts); this is the fold every
 * page and total of the table must equal, row for row and cursor for cursor.
 */
export class LedgerProjection {
  readonly #chains = new Map<string, LedgerChain>();
  /** Every request, by the seq of its first entry, ascending (the follower gives them in that order). */
  readonly #order: LedgerChain[] = [];

  constructor(private readonly inboxName: string) {}

  /** Take an appended entry with its journal seq; every entry of the journal must be given, in order. */
  note(entry: Entry, seq: number): void {
    const chain = this.#chains.get(entry.effect_id);
    if (chain !== undefined) {
      chain.push(entry);
      return;
    }
    const started = LedgerChain.start(entry, seq, this.inboxName);
    if (started === null) return;
    const last = this.#order.at(-1);
    if (last !== undefined && last.headSeq >= seq) throw new Error(`ledger: entry seq ${seq} arrived after seq ${last.headSeq}`);
    this.#chains.set(entry.effect_id, started);
    this.#order.push(started);
  }

  /** The effect's row, when it is a request in the ledger (one of the inbox's, with a request bound). */
  rowOf(effectId: string, displayName: DisplayName): LedgerRow | null {
    return this.#chains.get(effectId)?.row(displayName) ?? null;
  }

  /** How many requests the ledger holds. */
  get size(): number {
    return this.#order.length;
  }

  /** One page of matching rows, newest request first. */
  page(filter: LedgerFilter, asked: PageRequest, displayName: DisplayName): PageFound {
    const rows: LedgerRow[] = [];
    let i = this.#below(asked.beforeSeq) - 1;
    for (; i >= 0 && rows.length < asked.limit; i--) {
      const row = this.#order[i]!.row(displayName);
      if (row !== null && rowMatches(row, filter)) rows.push(row);
    }
    // Look on for one more match, so the last page says it is the last.
    for (; i >= 0; i--) {
      const row = this.#order[i]!.row(displayName);
      if (row !== null && rowMatches(row, filter)) return { rows, nextBeforeSeq: this.#seqOf(rows) };
    }
    return { rows, nextBeforeSeq: null };
  }

  /** Totals per currency over every row the filter matches, whatever the page. */
  totals(filter: LedgerFilter, displayName: DisplayName): TotalsFound {
    return totalRows(this.#matching(filter, displayName));
  }

  *#matching(filter: LedgerFilter, displayName: DisplayName): Generator<LedgerRow> {
    for (const chain of this.#order) {
      const row = chain.row(displayName);
      if (row !== null && rowMatches(row, filter)) yield row;
    }
  }

  #seqOf(rows: readonly LedgerRow[]): number | null {
    const last = rows.at(-1);
    return last === undefined ? null : (this.#chains.get(last.effect_id)?.headSeq ?? null);
  }

  /** The index of the first request whose first entry is at or after `seq` (the end when absent). */
  #below(seq: number | undefined): number {
    if (seq === undefined) return this.#order.length;
    let lo = 0;
    let hi = this.#order.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.#order[mid]!.headSeq < seq) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}
