import { performance } from 'node:perf_hooks';

/** The nearest-rank percentile `p` (0–100) of `values`; NaN when there are none. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
  return sorted[rank - 1]!;
}

/** Milliseconds since `startMs` (a `performance.now()` reading). */
export function sinceMs(startMs: number): number {
  return performance.now() - startMs;
}

/** Resolve after `ms`. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Run `fn` `times` times in a row and collect what each run returns. */
export async function repeat<T>(times: number, fn: (rep: number) => Promise<T>): Promise<T[]> {
  const out: T[] = [];
  for (let rep = 0; rep < times; rep++) out.push(await fn(rep));
  return out;
}
