/** A stored session, as the server's session store keeps it. */
export interface StoredSession {
  name: string;
  csrfToken: string;
  createdAtMs: number;
  lastSeenAtMs: number;
}

/** People's sessions as the storage keeps them, by hashed id: loaded at start, written when they start, end, or are seen after a while. */
export interface Sessions {
  load(): [string, StoredSession][];
  save(idHash: string, session: StoredSession | null): void;
}
