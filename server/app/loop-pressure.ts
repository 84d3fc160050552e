import { performance } from 'node:perf_hooks';
import { limits } from '../../shared/limits.ts';

/**
 * Whether agents are being shed now, told by the admission check (http/overload.ts) and read by
 * the journal's group commit: while they are, a committed batch's callers are settled a few per
 * turn of the event loop, so a shed agent's 429 waits for a few continuations rather than every
 * one (`limits.settleChunkWhileShedding`); otherwise all at once, which keeps the batches large.
 */
export class LoopPressure {
  #shedAtMs = Number.NEGATIVE_INFINITY;
  readonly #nowMs: () => number;

  constructor(nowMs: () => number = () => performance.now()) {
    this.#nowMs = nowMs;
  }

  /** An agent was just shed. */
  noteShed(): void {
    this.#shedAtMs = this.#nowMs();
  }

  /** How many callers of a committed batch to settle per turn of the loop now. */
  settleChunk(): number {
    return this.#nowMs() - this.#shedAtMs <= limits.settleInChunksForMs ? limits.settleChunkWhileShedding : Number.POSITIVE_INFINITY;
  }
}
