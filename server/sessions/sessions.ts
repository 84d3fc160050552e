import { createHash, randomBytes } from 'node:crypto';

/** One logged-in person. Only the SHA-256 of the session id is kept, so a leaked store cannot be replayed. */
export interface Session {
  name: string;
  csrfToken: string;
  createdAtMs: number;
  lastSeenAtMs: number;
}

/** Why a session ended: it timed out (idle or absolute), or it was ended (a logout, the oldest dropped). */
export type SessionEnd = 'expired' | 'ended';

/** Sessions held at once: far above a real approver team; the oldest go first beyond it. */
const SESSIONS_MAX = 10_000;
/** How stale the stored last-seen time may get: persisting every request would cost a write per read. */
const PERSIST_SEEN_EVERY_MS = 60_000;

function idHash(id: string): string {
  return createHash('sha256').update(id).digest('hex');
}

/**
 * Sessions with idle and absolute timeouts on the wall clock. Persisting them is the store's
 * business: `load`/`save` hooks let the server keep them across a restart.
 */
export class SessionStore {
  readonly #sessions = new Map<string, Session>();
  readonly #persistedSeenMs = new Map<string, number>();
  readonly #endedListeners = new Set<(session: Session, why: SessionEnd) => void>();
  /** Each live session's key in the store, so a session found by a watcher can be ended. */
  readonly #hashes = new WeakMap<Session, string>();

  constructor(
    private readonly options: {
      idleMs: number;
      absoluteMs: number;
      wallMs: () => number;
      persist?: { save(hash: string, session: Session | null): void; load(): Iterable<[string, Session]> };
    },
  ) {
    for (const [hash, session] of options.persist?.load() ?? []) {
      this.#sessions.set(hash, session);
      this.#hashes.set(session, hash);
    }
  }

  /** Start a session; returns the id for the cookie. */
  create(name: string): { id: string; session: Session } {
    if (this.#sessions.size >= SESSIONS_MAX) {
      const oldest = this.#sessions.keys().next().value;
      if (oldest !== undefined) this.drop(oldest);
    }
    const id = randomBytes(32).toString('base64url');
    const now = this.options.wallMs();
    const session: Session = { name, csrfToken: randomBytes(24).toString('base64url'), createdAtMs: now, lastSeenAtMs: now };
    const hash = idHash(id);
    this.#sessions.set(hash, session);
    this.#hashes.set(session, hash);
    this.options.persist?.save(hash, session);
    return { id, session };
  }

  /** The live session for a cookie id, refreshed; 'expired' when it timed out, null when unknown. */
  touch(id: string | undefined): Session | 'expired' | null {
    return this.#find(id, true);
  }

  /**
   * The live session for a cookie id, as `touch`, without refreshing it: for what a page reads by
   * itself (the live feed said something moved), so watching a page never keeps a session alive.
   */
  check(id: string | undefined): Session | 'expired' | null {
    return this.#find(id, false);
  }

  /** When a session ends unless a call refreshes it first: its idle limit, or its absolute one if sooner. */
  endsAtMs(session: Session): { atMs: number; renewable: boolean } {
    const idleEndMs = session.lastSeenAtMs + this.options.idleMs;
    const absoluteEndMs = session.createdAtMs + this.options.absoluteMs;
    return idleEndMs < absoluteEndMs ? { atMs: idleEndMs, renewable: true } : { atMs: absoluteEndMs, renewable: false };
  }

  /** End a session whose time is up, as a call would have found it; true when it was (or had already) ended. */
  expireIfDue(session: Session): boolean {
    const hash = this.#hashes.get(session);
    if (hash === undefined || this.#sessions.get(hash) !== session) return true;
    if (!this.#timedOut(session, this.options.wallMs())) return false;
    this.drop(hash, 'expired');
    return true;
  }

  #timedOut(session: Session, now: number): boolean {
    return now - session.lastSeenAtMs > this.options.idleMs || now - session.createdAtMs > this.options.absoluteMs;
  }

  #find(id: string | undefined, refresh: boolean): Session | 'expired' | null {
    if (!id) return null;
    const hash = idHash(id);
    const session = this.#sessions.get(hash);
    if (!session) return null;
    const now = this.options.wallMs();
    if (this.#timedOut(session, now)) {
      this.drop(hash, 'expired');
      return 'expired';
    }
    if (!refresh) return session;
    session.lastSeenAtMs = now;
    if (now - (this.#persistedSeenMs.get(hash) ?? session.createdAtMs) >= PERSIST_SEEN_EVERY_MS) {
      this.#persistedSeenMs.set(hash, now);
      this.options.persist?.save(hash, session);
    }
    return session;
  }

  /** End a session by its cookie id. */
  end(id: string | undefined): void {
    if (id) this.drop(idHash(id));
  }

  /**
   * End every session of these people (a reload removed them, or took a group or their role
   * away): each live feed on one of them is told and closes. Returns how many ended.
   */
  endFor(names: ReadonlySet<string>): number {
    const ended = [...this.#sessions].filter(([, session]) => names.has(session.name)).map(([hash]) => hash);
    for (const hash of ended) this.drop(hash);
    return ended.length;
  }

  /** Be told of every session that ends (a logout, a timeout found, the oldest dropped), and why; the answer stops it. */
  onEnded(listener: (session: Session, why: SessionEnd) => void): () => void {
    this.#endedListeners.add(listener);
    return () => this.#endedListeners.delete(listener);
  }

  private drop(hash: string, why: SessionEnd = 'ended'): void {
    const session = this.#sessions.get(hash);
    this.#sessions.delete(hash);
    this.#persistedSeenMs.delete(hash);
    this.options.persist?.save(hash, null);
    if (session) for (const listener of [...this.#endedListeners]) listener(session, why);
  }
}
