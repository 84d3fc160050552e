import { eq, inArray, sql } from 'drizzle-orm';
import { onConnection } from './connection.ts';
import type { JournalDb } from './open.ts';
import type { Sessions, StoredSession } from './port/sessions.ts';
import { sessions } from './schema.ts';

export type { StoredSession } from './port/sessions.ts';

/** Names ended a statement at most, within SQLite's limit on a statement's parameters. */
const NAMES_A_STATEMENT = 500;

/** Sessions in the journal's database, shared by every process on the file: each call one statement. */
export class SqliteSessions implements Sessions {

  constructor(private readonly db: JournalDb) {}

  /** Run `fn` on the journal's connection, under its lock (`onConnection`). */
  #locked<T>(fn: () => Promise<T>): Promise<T> {
    return onConnection(this.db.$client, fn);
  }

  create(idHash: string, session: StoredSession): Promise<void> {
    return this.#locked(async () => {
      this.db.insert(sessions).values({ idHash, ...session }).run();
    });
  }

  get(idHash: string): Promise<StoredSession | null> {
    return this.#locked(async () => {
      const row = this.db.select().from(sessions).where(eq(sessions.idHash, idHash)).get();
      return row === undefined ? null : { name: row.name, csrfToken: row.csrfToken, createdAtMs: row.createdAtMs, lastSeenAtMs: row.lastSeenAtMs };
    });
  }

  seen(idHash: string, atMs: number): Promise<boolean> {
    return this.#locked(async () => {
      // An UPDATE, never an upsert: a session ended meanwhile stays ended.
      const result = this.db
        .update(sessions)
        .set({ lastSeenAtMs: sql`max(${sessions.lastSeenAtMs}, ${atMs})` })
        .where(eq(sessions.idHash, idHash))
        .run();
      return result.changes === 1;
    });
  }

  end(idHash: string): Promise<boolean> {
    return this.#locked(async () => {
      return this.db.delete(sessions).where(eq(sessions.idHash, idHash)).run().changes === 1;
    });
  }

  endFor(names: ReadonlySet<string>): Promise<string[]> {
    return this.#locked(async () => {
      const all = [...names];
      const ended: string[] = [];
      for (let i = 0; i < all.length; i += NAMES_A_STATEMENT) {
        const some = all.slice(i, i + NAMES_A_STATEMENT);
        const rows = this.db.delete(sessions).where(inArray(sessions.name, some)).returning({ idHash: sessions.idHash }).all();
        ended.push(...rows.map((row) => row.idHash));
      }
      return ended;
    });
  }
}
