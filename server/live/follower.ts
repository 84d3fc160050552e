import { EventEmitter } from 'node:events';
import type { Entry } from '../../shared/entries.ts';
import { globalHashOf } from '../journal/hash.ts';
import { CHAIN_ENDS_MAX, type ChainEnd, type JournalHead, JournalCorruptError, type JournalStore, type Sequenced } from '../journal/store.ts';

/**
 * Entries read per page while catching up: bounds memory during a replay of a large journal. A
 * page is short-lived garbage once applied; at 5,000 the garbage collector copied whole pages
 * still in use, and a replay spent more time collecting than at 1,000.
 */
const SCAN_PAGE_ENTRIES = 1_000;

/**
 * Chains whose tails the follower holds, at most: those that moved most recently. A tail let go
 * is read again from the journal (`chainEnds`) when its chain next moves, with the other chains
 * of that page, so a journal of millions of chains costs a bounded map.
 */
export const TAILS_HELD_MAX = 100_000;

export interface FollowerOptions {
  /** Chains' tails held at most (TAILS_HELD_MAX). */
  tailsHeldMax?: number;
  /** Entries read a page (SCAN_PAGE_ENTRIES). */
  pageEntries?: number;
}

/** Where one chain stood at the last of its entries the follower applied. */
export interface ChainTail {
  /** The hash of that entry: the chain's entries up to it are pinned by it, each linked to the one before. */
  hash: string;
  /** How many entries of the chain the follower applied. */
  length: number;
  /** The journal sequence number of that entry. */
  seq: number;
}

/** Events the follower publishes after entries are durable in the journal. */
export interface FollowerEvents {
  /** A catch-up begins: nothing of it applied yet. */
  begin: [];
  entry: [entry: Entry, seq: number];
  caughtUp: [seq: number];
}

/**
 * Follows the journal by sequence number and hands every new entry, in order, to whoever
 * projects it. It is the one path from the journal to the views and the live feed, so a view
 * never shows anything that is not durable, and entries written by another process on the same
 * file show up too. Its owner (server/views/views.ts) decides when to catch up and what a failure
 * means: a failed catch-up applies nothing past the last good entry and rejects.
 *
 * Each entry's hash was checked by the journal's scan; the follower also checks that it links to
 * the entry before it in its chain, and keeps each chain's tail. So the tails are what the views
 * verified, and a chain read again later can be held against them (views.ts `chain`). A chain
 * shown or signed is held against its seals first (server/journal/seals.ts), which needs no state;
 * the tails remain for what the seals cannot tell: rows cut from a chain's end leave the rest
 * sealed as written. It
 * recomputes the global chain too, entry by entry from the first: a stored global hash that is
 * not the one the entries before it give is a journal changed behind its back; and after each
 * catch-up the seal stored at its last entry must still be the one it recomputed.
 *
 * It may start at a position (`startAt`: a seq, the journal's size there and the global hash at
 * it) instead of seq 0, once whoever gives it has checked that position against the journal's
 * seals: the first entry after it must then link to that global hash. The entries before the
 * start are not read; a chain begun before it is linked to its last entry before it as the journal
 * holds it (`chainEnds`, one read per page for every such chain of the page). The tails are kept
 * for the chains that moved most recently only (`tailsHeldMax`), and one let go is read the same
 * way when its chain moves again.
 */
export class JournalFollower extends EventEmitter<FollowerEvents> {
  #seq = 0;
  #size = 0;
  #global: string | null = null;
  #running: Promise<void> | null = null;
  #again = false;
  /** Tails in the order their chains last moved, least recent first. */
  readonly #tails = new Map<string, ChainTail>();
  readonly #tailsHeldMax: number;
  readonly #pageEntries: number;
  /** Tails let go during the page being applied: its later entries may still need them. */
  readonly #released = new Map<string, ChainTail>();
  /** Some chain may have entries at or below `seq` with no tail held: the follower started past 0, or let a tail go. */
  #partial = false;
  /** Entries read from the journal since this follower was made, for whoever measures a start. */
  #entriesRead = 0;

  /**
   * `afterPage` is awaited after each page of entries is applied, before the next is read, and
   * once more at the end of each catch-up (before `caughtUp`): what the entries' owners write of
   * them (the derived tables) goes out a page at a time, and nothing is owed when a catch-up ends.
   */
  constructor(
    private readonly journal: JournalStore,
    private readonly afterPage: () => Promise<void> = async () => {},
    options: FollowerOptions = {},
  ) {
    super();
    const max = options.tailsHeldMax ?? TAILS_HELD_MAX;
    if (!Number.isSafeInteger(max) || max < 1) throw new RangeError(`tailsHeldMax must be a positive integer: ${max}`);
    this.#tailsHeldMax = max;
    this.#pageEntries = options.pageEntries ?? SCAN_PAGE_ENTRIES;
  }

  /**
   * Start after `position` instead of seq 0: before the first catch-up only, with a position the
   * caller checked against the journal's seals (server/views/start-position.ts). Position 0 is
   * the start from the first entry.
   */
  startAt(position: JournalHead): void {
    if (this.#running !== null || this.#global !== null || this.#seq !== 0) throw new Error('a follower starts at a position before its first catch-up only');
    const { seq, size, globalHash } = position;
    if (!Number.isSafeInteger(seq) || seq < 0 || !Number.isSafeInteger(size) || size < 0 || size > seq) throw new RangeError(`a start position is a seq and a size no larger: ${seq}, ${size}`);
    if (seq === 0) return;
    this.#seq = seq;
    this.#size = size;
    this.#global = globalHash;
    this.#partial = true;
  }

  /** How many chains' tails are held now. */
  get tailsHeld(): number {
    return this.#tails.size;
  }

  /** Entries read from the journal since this follower was made. */
  get entriesRead(): number {
    return this.#entriesRead;
  }

  /** The last sequence number applied. */
  get seq(): number {
    return this.#seq;
  }

  /** The global chain as far as the follower recomputed it: null before the first entry. */
  get head(): JournalHead | null {
    return this.#global === null ? null : { seq: this.#seq, globalHash: this.#global, size: this.#size };
  }

  /** Where a chain stood at its last entry the follower applied, or undefined for a chain it has not seen. */
  tail(effectId: string): ChainTail | undefined {
    return this.#tails.get(effectId);
  }

  /** Apply everything appended since the last call; concurrent calls coalesce into one more pass. */
  catchUp(): Promise<void> {
    if (this.#running) {
      this.#again = true;
      return this.#running;
    }
    this.#running = (async () => {
      try {
        this.emit('begin');
        do {
          this.#again = false;
          for (;;) {
            const page = await this.journal.scan(this.#seq, this.#pageEntries);
            if (page.length === 0) break;
            this.#entriesRead += page.length;
            const recalled = this.#partial ? await this.#recall(page) : NONE_RECALLED;
            for (const { seq, entry, global } of page) {
              this.#link(seq, entry, recalled);
              const expected = globalHashOf(this.#global, seq, entry.hash);
              if (global !== expected) {
                throw new JournalCorruptError(`journal entry seq ${seq} breaks the global chain: the entries before it were changed, removed or reordered`, { seq, effectId: entry.effect_id });
              }
              this.#global = global;
              this.#size += 1;
              this.#seq = seq;
              this.emit('entry', entry, seq);
            }
            this.#released.clear();
            await this.afterPage();
          }
          // Asked for again while the seal was read or the last page written: read again, or
          // that ask would resolve without what was durable before it.
          await this.#holdHead();
          await this.afterPage();
        } while (this.#again);
        this.emit('caughtUp', this.#seq);
      } finally {
        this.#released.clear();
        this.#running = null;
      }
    })();
    return this.#running;
  }

  /**
   * The seal the journal stores at the last entry applied must be the global hash recomputed here
   * from the first entry: old rows rewritten together with every seal after them (so each seal
   * still follows from the one before) are caught at the next catch-up, whoever reads.
   */
  async #holdHead(): Promise<void> {
    if (this.#global === null) return;
    const stored = await this.journal.sealAt(this.#seq);
    if (stored !== this.#global) {
      throw new JournalCorruptError(`the journal's global seal at seq ${this.#seq} is not the global chain the views recomputed: entries and seals before it were rewritten or removed`, { seq: this.#seq, effectId: 'unknown' });
    }
  }

  /**
   * Where each chain of the page with no tail held stood before the page, read from the journal in
   * one call: its last entry at or below the follower's seq (none for a chain the page begins).
   */
  async #recall(page: readonly Sequenced[]): Promise<ReadonlyMap<string, ChainEnd>> {
    const missing = new Set<string>();
    for (const { entry } of page) if (!this.#tails.has(entry.effect_id)) missing.add(entry.effect_id);
    if (missing.size === 0) return NONE_RECALLED;
    const ids = [...missing];
    const recalled = new Map<string, ChainEnd>();
    for (let i = 0; i < ids.length; i += CHAIN_ENDS_MAX) {
      for (const end of await this.journal.chainEnds(ids.slice(i, i + CHAIN_ENDS_MAX), this.#seq)) recalled.set(end.effectId, end);
    }
    return recalled;
  }

  /** Extend the entry's chain by it, refusing an entry that does not link to the one before it. */
  #link(seq: number, entry: Entry, recalled: ReadonlyMap<string, ChainEnd>): void {
    const id = entry.effect_id;
    const tail = this.#tails.get(id) ?? this.#released.get(id) ?? recalled.get(id);
    if (entry.prev !== (tail?.hash ?? null)) {
      throw new JournalCorruptError(`journal entry seq ${seq} does not link to the entry before it in its chain`, { seq, effectId: id });
    }
    // Held again at the end: the map's order is the order chains last moved.
    const held = this.#tails.get(id);
    if (held === undefined) this.#tails.set(id, { hash: entry.hash, length: (tail?.length ?? 0) + 1, seq });
    else {
      this.#tails.delete(id);
      held.hash = entry.hash;
      held.length += 1;
      held.seq = seq;
      this.#tails.set(id, held);
    }
    if (this.#tails.size > this.#tailsHeldMax) {
      const [leastRecent] = this.#tails;
      if (leastRecent !== undefined) {
        this.#tails.delete(leastRecent[0]);
        this.#released.set(leastRecent[0], leastRecent[1]);
      }
      this.#partial = true;
    }
  }
}

const NONE_RECALLED: ReadonlyMap<string, ChainEnd> = new Map();
