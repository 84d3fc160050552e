/**
 * A first-come, first-served lock for asynchronous work: `run` starts `fn` at once when the lock is
 * free (synchronously, up to its first await), else once every earlier holder has finished. A
 * holder that awaits keeps the lock, so a transaction whose steps yield is never interleaved with
 * another of the same lock's users.
 */
export class AsyncLock {
  #held = false;
  readonly #waiting: Array<() => void> = [];

  /** True while a holder runs. */
  get held(): boolean {
    return this.#held;
  }

  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.#held) await new Promise<void>((resolve) => this.#waiting.push(resolve));
    else this.#held = true;
    try {
      return await fn();
    } finally {
      // Handed straight to the next waiter, so nobody who came later can slip in between.
      const next = this.#waiting.shift();
      if (next === undefined) this.#held = false;
      else next();
    }
  }
}
