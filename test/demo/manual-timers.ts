import type { DemoTimers } from '../../server/demo/traffic.ts';

/** Timers that run only when a test says so: no real waiting, and what is still pending is visible. */
export class ManualTimers implements DemoTimers {
  readonly #pending: Array<{ ms: number; run: () => void }> = [];
  /** Every delay asked for, in order. */
  readonly delays: number[] = [];

  after(ms: number, run: () => void): () => void {
    const timer = { ms, run };
    this.#pending.push(timer);
    this.delays.push(ms);
    return () => {
      const at = this.#pending.indexOf(timer);
      if (at >= 0) this.#pending.splice(at, 1);
    };
  }

  /** Timers set and neither run nor cancelled. */
  get pending(): number {
    return this.#pending.length;
  }

  /** Run the oldest pending timer now, as if its delay had passed. */
  fire(): void {
    const timer = this.#pending.shift();
    if (!timer) throw new Error('no timer is pending');
    timer.run();
  }
}
