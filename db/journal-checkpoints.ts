import { randomBytes } from 'node:crypto';
import Database from 'better-sqlite3';
import { desc, eq, sql } from 'drizzle-orm';
import { onConnection } from './connection.ts';
import type { JournalDb } from './open.ts';
import { type Checkpoints, JournalIdUnreadableError, type StoredCheckpoint } from './port/checkpoints.ts';
import { journalCheckpoints, journalMeta, journalSeals } from './schema.ts';

export type { StoredCheckpoint } from './port/checkpoints.ts';

// The SQLite side of the checkpoints: the signed notes, apart from the entries, and the journal's
// id, which names the journal in every checkpoint's origin.

const JOURNAL_ID = 'journal_id';

/** A journal id as `ensureJournalId` makes one: 8 random bytes in hex. */
export function newJournalId(): string {
  return randomBytes(8).toString('hex');
}

export class SqliteCheckpoints implements Checkpoints {

  constructor(private readonly db: JournalDb) {}

  /** Run `fn` on the journal's connection, under its lock (`onConnection`). */
  #locked<T>(fn: () => Promise<T>): Promise<T> {
    return onConnection(this.db.$client, fn);
  }

  latest(): Promise<StoredCheckpoint | null> {
    return this.#locked(async () => {
      return this.db.select().from(journalCheckpoints).orderBy(desc(journalCheckpoints.id)).limit(1).get() ?? null;
    });
  }

  all(): Promise<StoredCheckpoint[]> {
    return this.#locked(async () => {
      return this.db.select().from(journalCheckpoints).orderBy(journalCheckpoints.id).all();
    });
  }

  add(checkpoint: Omit<StoredCheckpoint, 'id'>): Promise<boolean> {
    return this.#locked(async () => {
      // IMMEDIATE: the write lock is taken before the newest is read, so two processes never both
      // read the same newest and both insert.
      return this.db.transaction(
        (tx) => {
          const newest = tx.select().from(journalCheckpoints).orderBy(desc(journalCheckpoints.id)).limit(1).get();
          if (newest !== undefined && newest.epoch === checkpoint.epoch && newest.size >= checkpoint.size) return false;
          tx.insert(journalCheckpoints).values(checkpoint).run();
          return true;
        },
        { behavior: 'immediate' },
      );
    });
  }

  journalId(): Promise<string | null> {
    return this.#locked(async () => {
      try {
        return this.db.select().from(journalMeta).where(eq(journalMeta.name, JOURNAL_ID)).get()?.value ?? null;
      } catch (error) {
        if (!(error instanceof Database.SqliteError)) throw error;
        throw new JournalIdUnreadableError(error.message);
      }
    });
  }

  ensureJournalId(): Promise<string> {
    return this.#locked(async () => {
      this.db.insert(journalMeta).values({ name: JOURNAL_ID, value: newJournalId() }).onConflictDoNothing().run();
      const id = this.db.select().from(journalMeta).where(eq(journalMeta.name, JOURNAL_ID)).get()?.value ?? null;
      if (id === null) throw new Error('the journal id could not be stored');
      return id;
    });
  }

  globalHashAtSize(size: number, dense = false): Promise<string | null> {
    return this.#locked(async () => {
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
    });
  }

  seqAtSize(size: number): Promise<number | null> {
    return this.#locked(async () => {
      if (size <= 0) return 0;
      const row = this.db.get<{ seq: number } | undefined>(sql`SELECT seq FROM entries ORDER BY seq LIMIT 1 OFFSET ${size - 1}`);
      return row?.seq ?? null;
    });
  }
}
