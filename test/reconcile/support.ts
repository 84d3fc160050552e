import type { PacingClock } from '../../server/reconcile/token-bucket.ts';

/** A pacing clock that never really waits: a sleep moves it forward at once. */
export function fakePacingClock(startMs = 1_000_000): PacingClock & { slept: number[] } {
  let nowMs = startMs;
  const slept: number[] = [];
  return {
    slept,
    nowMs: () => nowMs,
    sleep: async (ms) => {
      slept.push(ms);
      nowMs += ms;
    },
  };
}

/** A pacing clock whose sleeps wait until the test lets them go: a run can be held mid-listing. */
export function heldPacingClock(): PacingClock & { release(): void; sleeping(): number } {
  let nowMs = 1_000_000;
  const waiting: Array<() => void> = [];
  return {
    nowMs: () => nowMs,
    sleep: (ms) =>
      new Promise<void>((resolve) =>
        waiting.push(() => {
          nowMs += ms;
          resolve();
        }),
      ),
    release: () => {
      for (const wake of waiting.splice(0)) wake();
    },
    sleeping: () => waiting.length,
  };
}

/** The most calls that fall in any window of `windowMs` (a window starting at each call). */
export function busiestWindow(timesMs: readonly number[], windowMs = 1000): number {
  const sorted = [...timesMs].sort((a, b) => a - b);
  let most = 0;
  for (let i = 0, j = 0; i < sorted.length; i++) {
    while (sorted[j]! <= sorted[i]! - windowMs) j++;
    most = Math.max(most, i - j + 1);
  }
  return most;
}
