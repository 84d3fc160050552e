import { EventEmitter } from 'node:events';
import type { Entry } from '../../shared/entries.ts';
import type { JournalStore } from '../journal/store.ts';

/**
 * Entries read per page while catching up: bounds memory during a replay of a large journal. A
 * page is short-lived garbage once applied; at 5,000 the garbage collector copied whole pages
 * still in use, and a replay spent more time collecting than at 1,000.
 */
const SCAN_PAGE_ENTRIES = 1_000;

/** Events the follower publishes after entries are durable in the journal. */
export interface FollowerEvents {
  entry: [entry: Entry, seq: number];
  caughtUp: [seq: number];
}

/**
 * Follows the journal by sequence number and hands every new entry, in order, to whoever
 * projects it. It is the one path from the journal to the views and the live feed, so a view
 * never shows anything that is not durable, and entries written by another process on the same
 * file show up too. Its owner (server/views.ts) decides when to catch up and what a failure
 * means: a failed catch-up applies nothing past the last good entry and rejects.
 */
export class JournalFollower extends EventEmitter<FollowerEvents> {
  #seq = 0;
  #running: Promise<void> | null = null;
  #again = false;

  constructor(private readonly journal: JournalStore) {
    super();
  }

  /** The last sequence number applied. */
  get seq(): number {
    return this.#seq;
  }

  /** Apply everything appended since the last call; concurrent calls coalesce into one more pass. */
  catchUp(): Promise<void> {
    if (this.#running) {
      this.#again = true;
      return this.#running;
    }
    this.#running = (async () => {
      try {
        do {
          this.#again = false;
          for (;;) {
            const page = await this.journal.scan(this.#seq, SCAN_PAGE_ENTRIES);
            if (page.length === 0) break;
            for (const { seq, entry } of page) {
              this.#seq = seq;
              this.emit('entry', entry, seq);
            }
          }
        } while (this.#again);
        this.emit('caughtUp', this.#seq);
      } finally {
        this.#running = null;
      }
    })();
    return this.#running;
  }
}
