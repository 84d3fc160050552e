// Vitest's global setup (vitest.config.ts): the server compiled once for the run, as `npm run
// build` compiles it, for the tests that start real server processes (test/support/server-process.ts).
// Started through tsx, every process compiled and linked the server's TypeScript again: 7.3 CPU
// seconds to a ready empty server on the 2-core machine, against 1.7 s for the compiled one, and
// the suite starts hundreds of them, so on a loaded run starts went past their 30 s. The bundle is
// built from the files as they are at the start of the run, so it tests the same code and the
// build besides. The tests' own child processes are built with it (test/support/compiled-entries.ts).
import { existsSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TestProject } from 'vitest/node';
import { buildServer } from '../../scripts/build-server.ts';
import { TEST_ENTRY_POINTS } from './compiled-entries.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The folder of the compiled server (main.js, the tools, sandbox.js), two folders below the project as dist/server is. */
    serverBundle: string;
  }
}

const root = fileURLToPath(new URL('../../', import.meta.url));


/**
 * `test-results/server`: two folders below the project, as dist/server is (the bundles find
 * ../../dist/web and ../../interlock.yaml from there), and a folder named `server`, as
 * `npm run reload` expects of the process it signals.
 */
const BUNDLE = join(root, 'test-results', 'server');

/** The build of this run, shared by the projects' setups (they run in one process). */
const shared = globalThis as { interlockServerBundle?: Promise<void> };

/**
 * Built beside and then moved in: a run started meanwhile in the same folder sees the old bundle
 * or the new one, never half of one.
 */
async function build(): Promise<void> {
  const next = join(root, 'test-results', `server.${process.pid}.building`);
  await buildServer(next, TEST_ENTRY_POINTS);
  rmSync(BUNDLE, { recursive: true, force: true });
  renameSync(next, BUNDLE);
}

/**
 * `INTERLOCK_SERVER_BUNDLE=reuse`: the bundle an earlier vitest run of the same `npm test` built
 * from the same files (scripts/test.sh sets it for the PostgreSQL phase, which runs after the
 * others), used as it is when it is there.
 */
const reuse = process.env.INTERLOCK_SERVER_BUNDLE === 'reuse' && existsSync(join(BUNDLE, 'main.js'));

export default async function setup(project: TestProject): Promise<void> {
  shared.interlockServerBundle ??= reuse ? Promise.resolve() : build();
  await shared.interlockServerBundle;
  project.provide('serverBundle', BUNDLE);
}
