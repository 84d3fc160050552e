import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

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
    testTimeout: 20_000,
    hookTimeout: 30_000,
  },
});
