import { BoundedStore } from '../../shared/bounded-store.ts';
import { limits } from '../../shared/limits.ts';
import { LOGIN_COUNT_KINDS, type LoginCount, type LoginCountKind, type LoginCounts, type LoginKeys, type LoginStepResult, type LoginThrottles } from '../port/login-throttles.ts';

/**
 * The login counts in this process's memory, one bounded store per kind (shared/bounded-store.ts:
 * the least recently used count is forgotten first). It is what a SQLite storage uses: one SQLite
 * file is one host, where one server takes the logins; processes that share a file each keep their
 * own counts. A restart forgets them, which costs a guesser's delay at most; it never locks
 * anyone in or out. A step runs without awaiting anything, so no other step comes between its read
 * and its write.
 */
export class MemoryLoginThrottles implements LoginThrottles {
  readonly #kinds: Record<LoginCountKind, BoundedStore<LoginCount>>;

  constructor(options: { entriesMax?: number } = {}) {
    const entriesMax = options.entriesMax ?? limits.throttleEntriesMax;
    this.#kinds = { pair: new BoundedStore(entriesMax), name: new BoundedStore(entriesMax), address: new BoundedStore(entriesMax) };
  }

  async step<T>(keys: LoginKeys, _nowMs: number, decide: (counts: LoginCounts) => LoginStepResult<T>): Promise<T> {
    const counts: LoginCounts = { pair: undefined, name: undefined, address: undefined };
    for (const kind of LOGIN_COUNT_KINDS) counts[kind] = this.#kinds[kind].get(keys[kind]);
    const { writes, answer } = decide(counts);
    for (const kind of LOGIN_COUNT_KINDS) {
      const write = writes[kind];
      if (write === null) this.#kinds[kind].delete(keys[kind]);
      else if (write !== undefined) this.#kinds[kind].set(keys[kind], { failures: write.failures, atMs: write.atMs });
    }
    return answer;
  }

  /** How many counts of `kind` are kept (for tests). */
  size(kind: LoginCountKind): number {
    return this.#kinds[kind].size;
  }
}
