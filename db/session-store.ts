import { eq } from 'drizzle-orm';
import type { JournalDb } from './open.ts';
import { sessions } from './schema.ts';

/** A stored session, as the server's session store keeps it. */
export interface StoredSession {
  name: string;
  csrfToken: string;
  createdAtMs: number;
  lastSeenAtMs: number;
}

/** Sessions in the journal's database: loaded at start, written when they start, end, or are seen after a while. */
export class SqliteSessions {
  constructor(private readonly db: JournalDb) {}

  load(): [string, StoredSession][] {
    return this.db
      .select()
      .from(sessions)
      .all()
      .map((row) => [row.idHash, { name: row.name, csrfToken: row.csrfToken, createdAtMs: row.createdAtMs, lastSeenAtMs: row.lastSeenAtMs }]);
  }

  save(idHash: string, session: StoredSession | null): void {
    if (session === null) {
      this.db.delete(sessions).where(eq(sessions.idHash, idHash)).run();
      return;
    }
    this.db
      .insert(sessions)
      .values({ idHash, ...session })
      .onConflictDoUpdate({ target: sessions.idHash, set: { lastSeenAtMs: session.lastSeenAtMs } })
      .run();
  }
}
