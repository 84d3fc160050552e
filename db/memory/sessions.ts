import type { Sessions, StoredSession } from '../port/sessions.ts';

/** Sessions in memory, for tests and the simulator: every user of one instance shares them. */
export class MemorySessions implements Sessions {
  readonly #rows = new Map<string, StoredSession>();

  async create(idHash: string, session: StoredSession): Promise<void> {
    if (this.#rows.has(idHash)) throw new Error('a session with this id is kept already');
    this.#rows.set(idHash, { ...session });
  }

  async get(idHash: string): Promise<StoredSession | null> {
    const row = this.#rows.get(idHash);
    return row === undefined ? null : { ...row };
  }

  async seen(idHash: string, atMs: number): Promise<boolean> {
    const row = this.#rows.get(idHash);
    if (row === undefined) return false;
    row.lastSeenAtMs = Math.max(row.lastSeenAtMs, atMs);
    return true;
  }

  async end(idHash: string): Promise<boolean> {
    return this.#rows.delete(idHash);
  }

  async endFor(names: ReadonlySet<string>): Promise<string[]> {
    const ended = [...this.#rows].filter(([, row]) => names.has(row.name)).map(([hash]) => hash);
    for (const hash of ended) this.#rows.delete(hash);
    return ended;
  }
}
