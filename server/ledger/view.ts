import type { DerivedChange, DerivedTables } from '../../db/port/derived.ts';
import type { Entry } from '../../shared/entries.ts';
import type { LedgerRow } from '../../shared/ledger.ts';
import { type DisplayName, LedgerChain } from './chain.ts';
import type { LedgerFilter } from './filter.ts';
import type { PageFound, PageRequest } from './projection.ts';
import { asLogin, isOpenRow, LEDGER_VIEW, tableRow } from './table.ts';
import { shownRow, tablePage, tableTotals } from './table-read.ts';
import type { TotalsFound } from './totals.ts';

export interface LedgerViewOptions {
  inboxName: string;
  tables: DerivedTables;
  /** A chain as the journal holds it now (through the views' guard). */
  entries: (effectId: string) => Promise<Entry[]>;
  /** Where the tables' cursor stands, as far as the views know: entries at or below it are in the tables. */
  tablesSeq: () => number;
  /** The last journal seq the views applied. */
  viewsSeq: () => number;
  /** Whether someone is told which chains moved: only then is what each stood at before kept (`moved`). */
  watching?: () => boolean;
}

/** Chains known to be no request of the ledger, held at most: beyond it they are forgotten and looked up again. */
const NOT_LEDGER_HELD_MAX = 10_000;

/** A chain folded in memory, and the seq of its last entry folded. */
interface Held {
  chain: LedgerChain;
  lastSeq: number;
}

/** Where to cut a chain read again: its entry of this hash, at this seq, is the last to fold. */
interface Cut {
  hash: string;
  seq: number;
}

/**
 * What a chain stood at before its first entry since the watchers were last told: its status
 * (null: no row, or a chain that begins) and, while a send was under way, the status it stood at
 * when the send began; or, for a chain not in memory, the hash of its entry to fold the journal
 * through to know them.
 */
type Before = Stood | { through: string };

interface Stood {
  stood: string | null;
  sentFrom: string | null;
}

/**
 * A chain that moved, for the watchers: its status before (null: none), the status it stood at
 * when a send under way then began (null: no send under way), and its row now (null: no request's).
 */
export interface Moved {
  before: string | null;
  sentFrom: string | null;
  row: LedgerRow | null;
}

/**
 * The ledger read from its derived table, with only open work folded in memory. Every entry is
 * given in journal order (by the views' follower); the chains that can still change are folded
 * here, and each changed row is handed to the views' writer (`changes`) for the table. A chain
 * leaves memory once the table holds the entry that closed it; an entry for a chain not in memory
 * (a late confirmation) folds it again from the journal (`settle`), cut at that entry. Pages,
 * totals and a row are read from the table, which the views keep at least as far as they are.
 */
export class LedgerView {
  readonly #options: LedgerViewOptions;
  readonly #held = new Map<string, Held>();
  /** Chains not in memory that moved: folded again from the journal at `settle`. */
  readonly #refold = new Map<string, Cut>();
  /** Chains that are no request of the inbox: their entries are passed over. */
  readonly #notLedger = new Set<string>();
  /** Rows changed since the last batch the tables took. */
  readonly #changed = new Set<string>();
  /** Chains folded since they were last looked at for eviction: only these can have closed. */
  readonly #touched = new Set<string>();
  /** While watched: what each chain moved since the watchers were last told stood at before. */
  readonly #before = new Map<string, Before>();
  /** While watched: chains not in memory whose entries the tables hold already (another process wrote them), cut where they were last seen. */
  readonly #outside = new Map<string, string>();
  /** Those chains' rows folded from the journal at `settle`, for the watchers. */
  readonly #outsideRows = new Map<string, LedgerRow | null>();

  constructor(options: LedgerViewOptions) {
    this.#options = options;
  }

  /** Nothing is read at start: an open row of the table is folded again from the journal when its chain next moves. */
  async load(_seq: number): Promise<void> {}

  /** Take an appended entry with its journal seq, in journal order. */
  note(entry: Entry, seq: number): void {
    const id = entry.effect_id;
    const after = seq > this.#options.tablesSeq();
    const held = this.#held.get(id);
    const watching = this.#options.watching?.() === true && !this.#notLedger.has(id);
    if (watching && !this.#before.has(id)) this.#before.set(id, beforeOf(held, entry));
    if (held !== undefined) {
      held.chain.push(entry);
      held.lastSeq = seq;
      this.#touched.add(id);
      if (after) this.#changed.add(id);
      return;
    }
    const refold = this.#refold.get(id);
    if (refold !== undefined) {
      this.#refold.set(id, { hash: entry.hash, seq });
      return;
    }
    if (this.#notLedger.has(id)) return;
    // The tables hold it already, and nothing in memory needs it (but the watchers, who are told its row).
    if (!after) {
      if (watching) this.#outside.set(id, entry.hash);
      return;
    }
    if (entry.prev !== null) {
      this.#refold.set(id, { hash: entry.hash, seq });
      return;
    }
    const started = LedgerChain.start(entry, seq, this.#options.inboxName);
    if (started === null) {
      this.#notLedger.add(id);
      return;
    }
    this.#held.set(id, { chain: started, lastSeq: seq });
    this.#touched.add(id);
    this.#changed.add(id);
  }

  /**
   * Fold again from the journal every chain that moved while not in memory. Called between the
   * follower's pages, so no entry arrives meanwhile. Nothing is read at start: an open row of the
   * table is folded again when its chain next moves, so a start reads no chain for the ledger.
   */
  async settle(): Promise<void> {
    for (const [id, cut] of this.#refold) {
      const stored = await this.#options.tables.get(LEDGER_VIEW, id);
      if (stored === null) this.#notLedger.add(id);
      else {
        const chain = await this.#fold(id, stored.order, cut.hash);
        if (chain === null) throw new Error(`the ledger cannot fold ${id} again: the journal's chain does not start a request or lacks entry ${cut.hash}`);
        this.#held.set(id, { chain, lastSeq: cut.seq });
        this.#changed.add(id);
        this.#touched.add(id);
      }
      this.#refold.delete(id);
    }
    for (const [id, hash] of this.#outside) {
      // Its row's order is no watcher's concern: the chain is folded for them, never written.
      const chain = this.#held.has(id) ? undefined : await this.#fold(id, 0, hash);
      if (chain === null) this.#notLedger.add(id);
      else if (chain !== undefined) this.#outsideRows.set(id, chain.row(asLogin));
      this.#outside.delete(id);
    }
    // Requests of other inboxes are few; should they pile up, they are looked up again instead.
    if (this.#notLedger.size > NOT_LEDGER_HELD_MAX) this.#notLedger.clear();
  }

  /** The rows changed since the last batch the tables took, as they stand now. */
  changes(): DerivedChange[] {
    const changes: DerivedChange[] = [];
    for (const id of this.#changed) {
      const held = this.#held.get(id);
      const row = held?.chain.row(asLogin) ?? null;
      if (held !== undefined && row !== null) changes.push({ view: LEDGER_VIEW, key: id, row: tableRow(row, held.chain.headSeq) });
    }
    return changes;
  }

  /** The tables took the changes (or another process wrote the same entries): none is owed now. */
  written(): void {
    this.#changed.clear();
  }

  /**
   * Let go of every chain that is closed and whose last entry the tables hold. Only chains folded
   * since the last look are looked at (an open one is looked at again when it next moves), so a
   * catch-up costs nothing per open chain that did not move.
   */
  evict(): void {
    const tablesSeq = this.#options.tablesSeq();
    for (const id of this.#touched) {
      const held = this.#held.get(id);
      if (held !== undefined && (held.lastSeq > tablesSeq || this.#changed.has(id))) continue;
      this.#touched.delete(id);
      const row = held?.chain.row(asLogin) ?? null;
      if (row !== null && !isOpenRow(row)) this.#held.delete(id);
    }
  }

  /** How many chains are folded in memory. */
  get heldChains(): number {
    return this.#held.size;
  }

  /** A row folded in memory (open work, or a chain that just moved), with display names; null when not held. */
  heldRow(effectId: string, displayName: DisplayName): LedgerRow | null {
    return this.#held.get(effectId)?.chain.row(displayName) ?? null;
  }

  /**
   * A chain that moved since the watchers were last told (`told`): its row as it stands now (names
   * as logins) and the status it stood at before; null for a chain that began since, or had no row.
   */
  moved(effectId: string): Moved {
    const before = this.#before.get(effectId);
    const row = this.#held.has(effectId) ? this.heldRow(effectId, asLogin) : (this.#outsideRows.get(effectId) ?? null);
    const stood = before !== undefined && 'stood' in before ? before : null;
    return { before: stood?.stood ?? null, sentFrom: stood?.sentFrom ?? null, row };
  }

  /** The watchers were told every chain moved so far: what those stood at before is let go. */
  told(): void {
    this.#before.clear();
    this.#outsideRows.clear();
  }

  /** The effect's row, when it is a request the views have seen (one of the inbox's, with a request bound). */
  async rowOf(effectId: string, displayName: DisplayName): Promise<LedgerRow | null> {
    const stored = await this.#options.tables.get(LEDGER_VIEW, effectId);
    // A row another process wrote past what these views applied is not theirs to show yet.
    if (stored === null || stored.order > this.#options.viewsSeq()) return null;
    return shownRow(stored, displayName);
  }

  /** One page of matching rows, newest request first. */
  page(filter: LedgerFilter, asked: PageRequest, displayName: DisplayName): Promise<PageFound> {
    return tablePage(this.#options.tables, filter, asked, displayName);
  }

  /** Totals per currency over every row the filter matches, whatever the page. */
  totals(filter: LedgerFilter, displayName: DisplayName): Promise<TotalsFound> {
    return tableTotals(this.#options.tables, filter, displayName);
  }

  /**
   * A chain folded from the journal through its entry of hash `through`; null when the chain does
   * not start a request or lacks that entry. What it stood at where a watcher needs to know is kept.
   */
  async #fold(effectId: string, headSeq: number, through: string): Promise<LedgerChain | null> {
    const entries = await this.#options.entries(effectId);
    const end = entries.findIndex((entry) => entry.hash === through);
    const first = entries[0];
    const chain = first === undefined || end < 0 ? null : LedgerChain.start(first, headSeq, this.#options.inboxName);
    if (chain === null) return null;
    const before = this.#before.get(effectId);
    const stoodAt = before !== undefined && 'through' in before ? before.through : null;
    for (const entry of entries.slice(0, end + 1)) {
      if (entry !== first) chain.push(entry);
      if (entry.hash === stoodAt) this.#before.set(effectId, stoodOf(chain));
    }
    return chain;
  }
}

/** What a chain stood at before `entry`, its first since the watchers were last told. */
function beforeOf(held: Held | undefined, entry: Entry): Before {
  if (held !== undefined) return stoodOf(held.chain);
  return entry.prev === null ? { stood: null, sentFrom: null } : { through: entry.prev };
}

/** Where a chain stands, for the watchers: nothing when it has no row. */
function stoodOf(chain: LedgerChain): Stood {
  const status = chain.row(asLogin)?.status ?? null;
  return { stood: status, sentFrom: status === null ? null : chain.sentFrom() };
}
