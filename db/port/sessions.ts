/** A stored session: who, the CSRF token, when it started and when it was last seen (ms, wall clock). */
export interface StoredSession {
  name: string;
  csrfToken: string;
  createdAtMs: number;
  lastSeenAtMs: number;
}

/**
 * People's sessions, by the SHA-256 of their id, shared by every process on the store: a session
 * one process starts is found by the others, and one it ends is gone for all of them.
 */
export interface Sessions {
  /** Keep a new session. */
  create(idHash: string, session: StoredSession): Promise<void>;
  /** The session as stored, or null when there is none (never started, or ended). */
  get(idHash: string): Promise<StoredSession | null>;
  /**
   * Move a session's last-seen time forward (never back). False when the session is gone: a
   * session another process ended is never brought back by being seen.
   */
  seen(idHash: string, atMs: number): Promise<boolean>;
  /** End a session; true when this call ended it. */
  end(idHash: string): Promise<boolean>;
  /** End every session of these people; the hashes ended. */
  endFor(names: ReadonlySet<string>): Promise<string[]>;
}
