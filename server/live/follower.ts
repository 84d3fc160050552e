import { EventEmitter } from 'node:events';
import type { Entry } from '../../shared/entries.ts';
import { globalHashOf } from '../journal/hash.ts';
import { type JournalHead, JournalCorruptError, type JournalStore } from '../journal/store.ts';

/**
 * Entries read per page while catching up: bounds memory during a replay of a large journal. A
 * page is short-lived garbage once applied; at 5,000 the garbage collector copied whole pages
 * still in use, and a replay spent more time collecting than at 1,000.
 */
const SCAN_PAGE_ENTRIES = 1_000;

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
 */
export class JournalFollower extends EventEmitter<FollowerEvents> {
  #seq = 0;
  #size = 0;
  #global: string | null = null;
  #running: Promise<void> | null = null;
  #again = false;
  readonly #tails = new Map<string, ChainTail>();

  /**
   * `afterPage` is awaited after each page of entries is applied, before the next is read, and
   * once more at the end of each catch-up (before `caughtUp`): what the entries' owners write of
   * them (the derived tables) goes out a page at a time, and nothing is owed when a catch-up ends.
   */
  constructor(
    private readonly journal: JournalStore,
    private readonly afterPage: () => Promise<void> = async () => {},
  ) {
    super();
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
            const page = await this.journal.scan(this.#seq, SCAN_PAGE_ENTRIES);
            if (page.length === 0) break;
            for (const { seq, entry, global } of page) {
              this.#link(seq, entry);
              const expected = globalHashOf(this.#global, seq, entry.hash);
              if (global !== expected) {
                throw new JournalCorruptError(`journal entry seq ${seq} breaks the global chain: the entries before it were changed, removed or reordered`, { seq, effectId: entry.effect_id });
              }
              this.#global = global;
              this.#size += 1;
              this.#seq = seq;
              this.emit('entry', entry, seq);
            }
            await this.afterPage();
          }
        } while (this.#again);
        await this.#holdHead();
        await this.afterPage();
        this.emit('caughtUp', this.#seq);
      } finally {
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

  /** Extend the entry's chain by it, refusing an entry that does not link to the one before it. */
  #link(seq: number, entry: Entry): void {
    const tail = this.#tails.get(entry.effect_id);
    if (entry.prev !== (tail?.hash ?? null)) {
      throw new JournalCorruptError(`journal entry seq ${seq} does not link to the entry before it in its chain`, { seq, effectId: entry.effect_id });
    }
    if (tail === undefined) this.#tails.set(entry.effect_id, { hash: entry.hash, length: 1, seq });
    else {
      tail.hash = entry.hash;
      tail.length += 1;
      tail.seq = seq;
    }
  }
}
