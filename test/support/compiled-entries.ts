import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { inject } from 'vitest';

// What the run's compiled build holds besides the server's own entry points (server/tools.ts):
// the processes the tests start themselves. Through tsx each of them compiled and linked the
// server's TypeScript again at every start (7.3 CPU-seconds for a server, against 1.7 compiled).
// Built once per run by test/support/server-bundle-setup.ts.

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));

/** The tests' own processes, by name in the build, each from its source file (from the project root). */
export const TEST_ENTRY_POINTS = {
  sandbox: 'server/sandbox/main.ts',
  'crash-child': 'test/support/crash-child.ts',
  'race-child': 'test/db/support/race-child.ts',
  'confirm-race-child': 'test/support/confirm-race-child.ts',
  'bench-append-child': 'test/support/bench-append-child.ts',
  'gate-send-kill-child': 'test/support/gate-send-kill-child.ts',
  'checkpoint-racer': 'test/port/support/checkpoint-racer.ts',
  'derived-racer': 'test/port/support/derived-racer.ts',
  'pg-derived-racer': 'test/port/support/pg-derived-racer.ts',
  'pg-tail-writer': 'test/port/support/pg-tail-writer.ts',
  'pg-race-child': 'test/port/support/pg-race-child.ts',
  'budget-wait-child': 'test/stripe/budget-wait-child.ts',
  'example-vercel-ai-sdk': 'examples/vercel-ai-sdk/agent.ts',
} as const;

/**
 * The file of one of the run's compiled entry points: `main` for the server, a tool's name
 * (`verify`, `export`, ...) or one of TEST_ENTRY_POINTS.
 */
export function compiledEntry(name: string): string {
  return join(inject('serverBundle'), `${name}.js`);
}

/** The compiled build of `source`, a script the tests start (an absolute path, one of TEST_ENTRY_POINTS). */
export function compiledScript(source: string): string {
  const shown = relative(repoRoot, source);
  const name = Object.entries(TEST_ENTRY_POINTS).find(([, path]) => path === shown)?.[0];
  if (name === undefined) throw new Error(`${shown} is not in the tests' compiled build: add it to TEST_ENTRY_POINTS (test/support/compiled-entries.ts)`);
  return compiledEntry(name);
}
