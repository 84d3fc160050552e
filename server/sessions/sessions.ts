import { createHash, randomBytes } from 'node:crypto';
import type { Sessions } from '../../db/port/sessions.ts';

/** One logged-in person. Only the SHA-256 of the session id is kept, so a leaked store cannot be replayed. */
export interface Session {
  name: string;
  csrfToken: string;
  createdAtMs: number;
  lastSeenAtMs: number;
}

/** Why a session ended: it timed out (idle or absolute), or it was ended (a logout, a reload, another server). */
export type SessionEnd = 'expired' | 'ended';

/** Sessions a server holds in its cache: far above a real approver team; beyond it the oldest is pushed out (it still stands, and is read again when used). */
const SESSIONS_MAX = 10_000;
/** The longest a server waits before keeping a call's last-seen time in the store: a write per call would cost a write per read. */
const PERSIST_SEEN_EVERY_MS_MAX = 60_000;

/**
 * How long a server may keep a session's newest last-seen time to itself: a hundredth of the idle
 * limit, at most a minute. Every server allows this much past the idle limit before it ends a
 * session as idle, since a call another server answered within it may not be in the store yet: a
 * session is never ended while a call on any server came within its idle limit, and it ends at most
 * a hundredth of the limit late.
 */
export function seenGraceMs(idleMs: number): number {
  return Math.min(PERSIST_SEEN_EVERY_MS_MAX, Math.floor(idleMs / 100));
}
/**
 * How long a session read from the store is believed before it is read again: a session another
 * process ended (a logout, a reload, a timeout it found) is refused here within this long.
 */
export const SESSION_CONFIRM_MS = 1_000;

function idHash(id: string): string {
  return createHash('sha256').update(id).digest('hex');
}

interface Cached {
  session: Session;
  /** When the store last said the session stands (wall clock). */
  confirmedAtMs: number;
}

/**
 * Sessions with idle and absolute timeouts on the wall clock, kept in the store every process on
 * it shares, and read through a cache: a session is looked up in the store on first use, and read
 * again once it has not been for `SESSION_CONFIRM_MS`, so a login made by another process works
 * here at once, and a session it ended is refused here within a second.
 */
export class SessionStore {
  readonly #cache = new Map<string, Cached>();
  readonly #persistedSeenMs = new Map<string, number>();
  readonly #endedListeners = new Set<(session: Session, why: SessionEnd) => void>();
  /** Each live session's key in the store, so a session found by a watcher can be ended. */
  readonly #hashes = new WeakMap<Session, string>();
  /** Sessions pushed out of the cache by its size alone: they still stand, and a watcher holding one reads it again. */
  readonly #evicted = new WeakSet<Session>();
  /** Counts the ends this process made: a read from the store that one overtook is read again. */
  #ends = 0;

  constructor(
    private readonly options: {
      idleMs: number;
      absoluteMs: number;
      wallMs: () => number;
      /** Where the sessions are kept, for every process on it. */
      store: Sessions;
    },
  ) {}

  /** Start a session, kept in the store before its id is handed out; returns the id for the cookie. */
  async create(name: string): Promise<{ id: string; session: Session }> {
    this.#makeRoom();
    const id = randomBytes(32).toString('base64url');
    const now = this.options.wallMs();
    const session: Session = { name, csrfToken: randomBytes(24).toString('base64url'), createdAtMs: now, lastSeenAtMs: now };
    const hash = idHash(id);
    await this.options.store.create(hash, { ...session });
    this.#cache.set(hash, { session, confirmedAtMs: now });
    this.#hashes.set(session, hash);
    return { id, session };
  }

  /** The live session for a cookie id, refreshed; 'expired' when it timed out, null when unknown. */
  touch(id: string | undefined): Promise<Session | 'expired' | null> {
    return this.#find(id, true);
  }

  /**
   * The live session for a cookie id, as `touch`, without refreshing it: for what a page reads by
   * itself (the live feed said something moved), so watching a page never keeps a session alive.
   */
  check(id: string | undefined): Promise<Session | 'expired' | null> {
    return this.#find(id, false);
  }

  /** When a session ends unless a call refreshes it first: its idle limit, or its absolute one if sooner. */
  endsAtMs(session: Session): { atMs: number; renewable: boolean } {
    const idleEndMs = session.lastSeenAtMs + this.#idleLimitMs;
    const absoluteEndMs = session.createdAtMs + this.options.absoluteMs;
    return idleEndMs < absoluteEndMs ? { atMs: idleEndMs, renewable: true } : { atMs: absoluteEndMs, renewable: false };
  }

  /**
   * End a session whose time is up, as a call would have found it, or one another process ended,
   * once it has not been read from the store for `SESSION_CONFIRM_MS` (at once with `fresh`); true
   * when it was (or had already) ended.
   */
  async expireIfDue(session: Session, options: { fresh?: boolean } = {}): Promise<boolean> {
    const hash = this.#hashes.get(session);
    if (hash === undefined) return true;
    const held = this.#cache.get(hash);
    const evicted = held === undefined && this.#evicted.has(session);
    if (!evicted && held?.session !== session) return true;
    // Pushed out of the cache only: held again, and the store asked whether it stands.
    if (evicted) {
      this.#evicted.delete(session);
      this.#cache.set(hash, { session, confirmedAtMs: Number.NEGATIVE_INFINITY });
    }
    const cached = await this.#current(hash, this.options.wallMs(), options.fresh === true || evicted);
    if (cached?.session !== session) return true;
    const ended = await this.#endIfTimedOut(hash, session, this.options.wallMs());
    return ended !== 'stands';
  }

  /**
   * End a session that timed out, asking the store first (another server may have stored a later
   * call): 'expired' when it ended here for its time, 'gone' when the store no longer has it.
   */
  async #endIfTimedOut(hash: string, session: Session, now: number): Promise<'stands' | 'expired' | 'gone'> {
    if (!this.#timedOut(session, now)) return 'stands';
    const read = await this.#current(hash, now, true);
    if (read?.session !== session) return 'gone';
    if (!this.#timedOut(session, now)) return 'stands';
    await this.#drop(hash, 'expired');
    return 'expired';
  }

  /** The idle limit with the grace for calls other servers have not stored yet. */
  get #idleLimitMs(): number {
    return this.options.idleMs + seenGraceMs(this.options.idleMs);
  }

  #timedOut(session: Session, now: number): boolean {
    return now - session.lastSeenAtMs > this.#idleLimitMs || now - session.createdAtMs > this.options.absoluteMs;
  }

  async #find(id: string | undefined, refresh: boolean): Promise<Session | 'expired' | null> {
    if (!id) return null;
    const hash = idHash(id);
    const now = this.options.wallMs();
    const cached = await this.#current(hash, now);
    if (cached === null) return null;
    const { session } = cached;
    const ended = await this.#endIfTimedOut(hash, session, now);
    if (ended !== 'stands') return ended === 'expired' ? 'expired' : null;
    if (!refresh) return session;
    session.lastSeenAtMs = Math.max(session.lastSeenAtMs, now);
    const persistedMs = this.#persistedSeenMs.get(hash) ?? session.createdAtMs;
    if (now - persistedMs >= seenGraceMs(this.options.idleMs)) {
      this.#persistedSeenMs.set(hash, now);
      let stands: boolean;
      try {
        stands = await this.options.store.seen(hash, now);
      } catch (error) {
        // Not kept: the next call tries again rather than a grace later.
        if (this.#persistedSeenMs.get(hash) === now) this.#persistedSeenMs.set(hash, persistedMs);
        throw error;
      }
      // Ended elsewhere since it was read: being seen never brings it back.
      if (!stands) {
        this.#forget(hash, 'ended');
        return null;
      }
    }
    return session;
  }

  /** The cached session, read again from the store when the cache has not for a second; null when the store has none. */
  async #current(hash: string, now: number, fresh = false): Promise<Cached | null> {
    const cached = this.#cache.get(hash);
    if (!fresh && cached !== undefined && now - cached.confirmedAtMs < SESSION_CONFIRM_MS && now >= cached.confirmedAtMs) return cached;
    // An end this process made while the read was under way may have come after it in the store:
    // read again (the end's write is ahead of that read), so a logout here is never undone.
    let ends = this.#ends;
    let stored = await this.options.store.get(hash);
    for (let tries = 0; ends !== this.#ends && tries < 3; tries++) {
      ends = this.#ends;
      stored = await this.options.store.get(hash);
    }
    // Another call may have read it meanwhile: the one cached object stays, so watchers keep it.
    const again = this.#cache.get(hash);
    if (stored === null) {
      if (again !== undefined) this.#forget(hash, 'ended');
      return null;
    }
    if (again !== undefined) {
      again.session.lastSeenAtMs = Math.max(again.session.lastSeenAtMs, stored.lastSeenAtMs);
      again.confirmedAtMs = now;
      return again;
    }
    this.#makeRoom();
    const session: Session = { ...stored };
    const read = { session, confirmedAtMs: now };
    this.#cache.set(hash, read);
    this.#hashes.set(session, hash);
    return read;
  }

  /** End a session by its cookie id, for every process on the store. */
  async end(id: string | undefined): Promise<void> {
    if (id) await this.#drop(idHash(id));
  }

  /**
   * End every session of these people (a reload removed them, or took a group or their role
   * away), for every process on the store: each live feed on one of them is told and closes.
   * Returns how many ended.
   */
  async endFor(names: ReadonlySet<string>): Promise<number> {
    this.#ends++;
    const local = [...this.#cache].filter(([, cached]) => names.has(cached.session.name)).map(([hash]) => hash);
    for (const hash of local) this.#forget(hash, 'ended');
    const stored = await this.options.store.endFor(names);
    return new Set([...local, ...stored]).size;
  }

  /** Be told of every session that ends here (a logout, a timeout found, one ended elsewhere found), and why; the answer stops it. */
  onEnded(listener: (session: Session, why: SessionEnd) => void): () => void {
    this.#endedListeners.add(listener);
    return () => this.#endedListeners.delete(listener);
  }

  async #drop(hash: string, why: SessionEnd = 'ended'): Promise<void> {
    this.#ends++;
    this.#forget(hash, why);
    await this.options.store.end(hash);
  }

  /** Only a cache: beyond the most held, the oldest is pushed out here, and stands for every server. */
  #makeRoom(): void {
    if (this.#cache.size < SESSIONS_MAX) return;
    const oldest = this.#cache.keys().next().value;
    if (oldest !== undefined) this.#evict(oldest);
  }

  /** Push a session out of the cache, telling nobody: it still stands in the store. */
  #evict(hash: string): void {
    const session = this.#cache.get(hash)?.session;
    this.#cache.delete(hash);
    this.#persistedSeenMs.delete(hash);
    if (session) this.#evicted.add(session);
  }

  /** Forget a session here, telling the listeners when it was cached. */
  #forget(hash: string, why: SessionEnd): void {
    const session = this.#cache.get(hash)?.session;
    this.#cache.delete(hash);
    this.#persistedSeenMs.delete(hash);
    if (session) for (const listener of [...this.#endedListeners]) listener(session, why);
  }
}
