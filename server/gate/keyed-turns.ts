/**
 * Turns per key inside one process: `run(key, fn)` starts `fn` only after every earlier `fn` of
 * the same key has settled. The journal's reservation guard is what makes dispatches on one
 * payment safe across processes; taking turns here only spares a process's own concurrent
 * requests from checking the facts again and again when they race one another.
 */
export class KeyedTurns {
  readonly #tails = new Map<string, Promise<unknown>>();

  async run<T>(key: string | null, fn: () => Promise<T>): Promise<T> {
    if (key === null) return fn();
    const previous = this.#tails.get(key) ?? Promise.resolve();
    const mine = previous.then(fn);
    // The tail never rejects, so a failed turn does not fail the next; the last one removes it.
    const tail = mine.then(
      () => {},
      () => {},
    );
    this.#tails.set(key, tail);
    try {
      return await mine;
    } finally {
      if (this.#tails.get(key) === tail) this.#tails.delete(key);
    }
  }

  /** Whether a `run` of this key would wait for an earlier one. */
  busy(key: string | null): boolean {
    return key !== null && this.#tails.has(key);
  }

  /** Keys with a turn running or waiting, for tests. */
  get size(): number {
    return this.#tails.size;
  }
}
