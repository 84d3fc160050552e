import { describe, expect, it } from 'vitest';
import { limits } from '../../shared/limits.ts';
import { LoopPressure } from '../../server/app/loop-pressure.ts';

// The journal settles a committed batch's callers a few at a time only while agents are being
// shed: a shed agent then waits for a few continuations, not all; otherwise all at once.

describe('loop pressure', () => {
  it('settles all at once until an agent is shed, a few at a time for a second after the last, then all at once again', () => {
    let nowMs = 10_000;
    const pressure = new LoopPressure(() => nowMs);
    expect(pressure.settleChunk()).toBe(Number.POSITIVE_INFINITY);
    pressure.noteShed();
    expect(pressure.settleChunk()).toBe(limits.settleChunkWhileShedding);
    nowMs += limits.settleInChunksForMs;
    expect(pressure.settleChunk()).toBe(limits.settleChunkWhileShedding);
    nowMs += 1;
    expect(pressure.settleChunk()).toBe(Number.POSITIVE_INFINITY);
  });
});
