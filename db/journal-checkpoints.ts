import { randomBytes } from 'node:crypto';
import { desc, eq, sql } from 'drizzle-orm';
import type { JournalDb } from './open.ts';
import { journalCheckpoints, journalMeta, journalSeals } from './schema.ts';

// The store's side of the checkpoints: the signed notes, apart from the entries, and the
// journal's id, which names the journal in every checkpoint's origin.

/** A checkpoint as the store keeps it. */
export interface StoredCheckpoint {
  id: number;
  epoch: number;
  size: number;
  head: string;
  note: string;
  signedAtMs: number;
}

const JOURNAL_ID = 'journal_id';

export class CheckpointStore {
  constructor(private readonly db: JournalDb) {}

  /** The newest checkpoint, or null for none yet. */
  latest(): StoredCheckpoint | null {
    return this.db.select().from(journalCheckpoints).orderBy(desc(journalCheckpoints.id)).limit(1).get() ?? null;
  }

  /** Every checkpoint, oldest first. */
  all(): StoredCheckpoint[] {
    return this.db.select().from(journalCheckpoints).orderBy(journalCheckpoints.id).all();
  }

  /**
   * Keep a checkpoint, only if it is larger than the newest one: processes on one journal sign
   * as their views catch up, and one a step behind never follows one ahead. True when kept.
   */
  add(checkpoint: Omit<StoredCheckpoint, 'id'>): boolean {
    return this.db.transaction(
      (tx) => {
        const newest = tx.select().from(journalCheckpoints).orderBy(desc(journalCheckpoints.id)).limit(1).get();
        if (newest !== undefined && newest.epoch === checkpoint.epoch && newest.size >= checkpoint.size) return false;
        tx.insert(journalCheckpoints).values(checkpoint).run();
        return true;
      },
      { behavior: 'immediate' },
    );
  }

  /** The journal's id, or null when it has none (a journal from before checkpoints, or one whose id was removed). */
  journalId(): string | null {
    return this.db.select().from(journalMeta).where(eq(journalMeta.name, JOURNAL_ID)).get()?.value ?? null;
  }

  /** Give the journal an id, once; the id it has if another process gave it one first. */
  ensureJournalId(): string {
    this.db.insert(journalMeta).values({ name: JOURNAL_ID, value: randomBytes(8).toString('hex') }).onConflictDoNothing().run();
    const id = this.journalId();
    if (id === null) throw new Error('the journal id could not be stored');
    return id;
  }

  /**
   * The global hash after the first `size` entries, from the seals (null when the journal has
   * fewer). `dense`: the caller knows the journal's seqs run 1, 2, … with no gap (its last seq is
   * its size, as replayed), so the `size`-th entry is seq `size`, found by key rather than by
   * walking the entries before it.
   */
  globalHashAtSize(size: number, dense = false): string | null {
    if (size <= 0) return null;
    if (dense) {
      const row = this.db.get<{ global_hash: string } | undefined>(
        sql`SELECT ${journalSeals.globalHash} AS global_hash FROM ${journalSeals} WHERE ${journalSeals.seq} = ${size} AND EXISTS (SELECT 1 FROM entries WHERE seq = ${size})`,
      );
      return row?.global_hash ?? null;
    }
    const row = this.db.get<{ global_hash: string } | undefined>(
      sql`SELECT ${journalSeals.globalHash} AS global_hash FROM ${journalSeals} WHERE ${journalSeals.seq} = (SELECT seq FROM entries ORDER BY seq LIMIT 1 OFFSET ${size - 1})`,
    );
    return row?.global_hash ?? null;
  }

  /** The seq of the `size`-th entry (0 for size 0), null when the journal has fewer. */
  seqAtSize(size: number): number | null {
    if (size <= 0) return 0;
    const row = this.db.get<{ seq: number } | undefined>(sql`SELECT seq FROM entries ORDER BY seq LIMIT 1 OFFSET ${size - 1}`);
    return row?.seq ?? null;
  }
}
