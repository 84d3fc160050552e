import type { FactsScheduler } from '../../server/facts/current-facts.ts';

/** Let every promise that can settle now settle (the captures a fired timer started, and what they chain). */
export async function settle(): Promise<void> {
  for (let i = 0; i < 10; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

/**
 * A clock and timers a test moves by hand: `advance` fires every timer that comes due, in order,
 * at its own time, letting the work each one starts settle before the next.
 */
export class FakeScheduler implements FactsScheduler {
  #nowMs: number;
  #nextId = 0;
  readonly #timers = new Map<number, { atMs: number; task: () => void }>();

  constructor(startMs = Date.UTC(2026, 0, 1)) {
    this.#nowMs = startMs;
  }

  nowMs(): number {
    return this.#nowMs;
  }

  after(delayMs: number, task: () => void): () => void {
    const id = this.#nextId++;
    this.#timers.set(id, { atMs: this.#nowMs + delayMs, task });
    return () => this.#timers.delete(id);
  }

  /** Timers waiting now. */
  get pending(): number {
    return this.#timers.size;
  }

  /** Move the clock forward by `ms`, firing each timer that comes due at its time. */
  async advance(ms: number): Promise<void> {
    const untilMs = this.#nowMs + ms;
    await settle();
    for (;;) {
      const due = [...this.#timers.entries()].sort(([a, x], [b, y]) => x.atMs - y.atMs || a - b)[0];
      if (due === undefined || due[1].atMs > untilMs) break;
      this.#timers.delete(due[0]);
      this.#nowMs = Math.max(this.#nowMs, due[1].atMs);
      due[1].task();
      await settle();
    }
    this.#nowMs = untilMs;
  }
}
