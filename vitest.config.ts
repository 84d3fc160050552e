import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The bench's smoke run takes a minute and a half on its own: started first, it runs beside the
 * rest instead of alone at the end (a fresh clone has no earlier timings for vitest to order by,
 * and there it started 435 s in and ended the suite 55 s after every other file).
 */
const FIRST = ['test/bench/smoke.test.ts'];

class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const first = (spec: TestSpecification) => FIRST.some((file) => spec.moduleId.endsWith(file));
    return [...sorted.filter(first), ...sorted.filter((spec) => !first(spec))];
  }
}

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    environment: 'node',
    pool: 'forks',
    // At least three files at once: most of a file's time is waiting (real servers, real processes
    // killed and restarted, real sockets), and vitest's default (one fewer than the cores) would
    // run them one by one on a 2-core machine. On 2 cores, 235 files took 490 s three at a time;
    // two at a time, 210 of them had taken 472 s.
    maxWorkers: Math.max(3, availableParallelism() - 1),
    sequence: { sequencer: LongestFirst },
    testTimeout: 20_000,
    hookTimeout: 30_000,
  },
});
