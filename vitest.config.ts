import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { configDefaults, defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The files that take longest, longest first. A fresh clone has no earlier timings, and vitest then
 * starts the largest files first, by bytes: a file of a minute and a half started 435 s in and
 * ended the suite 55 s after every other file. Started first, these run beside the many short files
 * instead of alone at the end. Each took 20 s or more on a fresh clone on the 2-core machine (the
 * simulator 141 s, the restart crash tests 91 s, the stale-diff races 80 s).
 */
const FIRST = [
  'test/sim/simulator.test.ts',
  'test/crash/server-restart.test.ts',
  'test/http/stale-diff-race.test.ts',
  'test/export/export-cli.test.ts',
  'test/http/shared-payment.test.ts',
  'test/http/shared-journal-start.test.ts',
  'test/crash/stop-with-stripe-hanging.test.ts',
  'test/crash/graceful-stop.test.ts',
  'test/build/compiled-server.test.ts',
  'test/crash/outbox-crash.test.ts',
  'test/demo/server.test.ts',
  'test/crash/gate-crash.test.ts',
  'test/receipts/key-file-server.test.ts',
  'test/stripe/shared-budget.test.ts',
  'test/backup/restore-cli-repeated.test.ts',
  // Packs and installs the packages into an empty folder (17 CPU-seconds), and runs the example agent.
  'test/packages/install.test.ts',
  'test/examples/vercel-ai-sdk.test.ts',
];

/**
 * The PostgreSQL files start last. Each starts a cluster in its worker process and processes of
 * its own (the journal contract creates 48 databases and 8 racer processes: 20.7 s alone), and
 * started among the files above they starved the multi-server files: on a fresh clone three of
 * those timed out at 30 s (shared-payment, shared-budget, key-file-server) while the journal
 * contract took 64 s beside them.
 */
const LAST = /\/test\/(port|db)\/pg-[^/]*\.test\.ts$|\/test\/support-tests\/postgres(-cluster)?\.test\.ts$/;

/**
 * Among the PostgreSQL files (the phase of their own in `npm test`), the longest first: a fresh
 * clone has no timings, and the fault proof (89 s) started 59 s into the phase and ended it 28 s
 * after every other file (the phase took 178 s, for 372 file-seconds on three workers).
 */
const PG_FIRST = [
  'test/db/pg-fault-proof.test.ts',
  'test/port/pg-journal.test.ts',
  'test/db/pg-gate-parity.test.ts',
  'test/port/pg-leases.test.ts',
  'test/support-tests/postgres-cluster.test.ts',
  'test/port/pg-derived.test.ts',
];

/**
 * The files that run in a process of their own. Every other file shares its worker process with the
 * files before it (no module isolation): a fresh process per file loaded the whole server again
 * each time, and on 2 cores 201 of the files took 495 CPU-seconds isolated against 181 shared. A
 * file that replaces a module (`vi.mock`) must be here (test/tidy/vitest-isolation.test.ts checks),
 * and so must a file that answers differently after others have run in its process.
 */
export const OWN_PROCESS = [
  'test/http/login-throttle.test.ts',
  'test/inbox/scenarios-narrowed.test.ts',
  // Its $10 refund was answered QUEUED, not COMMITTED, after other files in a shared process.
  'test/adversarial/reconciliation-masked-missing.test.ts',
];

class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rankIn = (list: readonly string[]) => (spec: TestSpecification) => {
      const at = list.findIndex((file) => spec.moduleId.endsWith(file));
      return at < 0 ? list.length : at;
    };
    const rank = rankIn(FIRST);
    const pgRank = rankIn(PG_FIRST);
    const first = sorted.filter((spec) => rank(spec) < FIRST.length).sort((a, b) => rank(a) - rank(b));
    const last = sorted.filter((spec) => rank(spec) === FIRST.length && LAST.test(spec.moduleId)).sort((a, b) => pgRank(a) - pgRank(b));
    return [...first, ...sorted.filter((spec) => rank(spec) === FIRST.length && !LAST.test(spec.moduleId)), ...last];
  }
}

/**
 * The PostgreSQL suites: outside the vitest phase of `npm test`, which runs them in a phase of their
 * own after it (scripts/test.sh), and in `npm run test:pg`. Among the other files on 2 cores they
 * took 64 s (the journal contract: a cluster, 48 databases, 8 racer processes), 31 s (the tail) and
 * 22 s (the schema), and the multi-server files beside them timed out.
 */
const PG_SUITES = ['test/port/pg-*.test.ts', 'test/db/pg-*.test.ts', 'test/support-tests/postgres-cluster.test.ts'];
const WITH_PG = process.env.INTERLOCK_PG_SUITES === '1';

export default defineConfig({
  // The MCP server imports the typed client by its package's name (packages/client); here, as in
  // tsconfig.json's paths, the name is the source itself.
  resolve: { alias: { '@interlock-placeholder/client': fileURLToPath(new URL('./shared/client/index.ts', import.meta.url)) } },
  test: {
    environment: 'node',
    pool: 'forks',
    // At least three files at once: most of a file's time is waiting (real servers, real processes
    // killed and restarted, real sockets), and vitest's default (one fewer than the cores) would
    // run them one by one on a 2-core machine. On 2 cores, 235 files took 490 s three at a time;
    // two at a time, 210 of them had taken 472 s.
    maxWorkers: Math.max(3, availableParallelism() - 1),
    sequence: { sequencer: LongestFirst },
    testTimeout: 20_000,
    // Once for the run: where PostgreSQL is missing (and CI is not set), one line says its suites are skipped.
    // And the server compiled once, for the tests that start server processes.
    globalSetup: ['test/support/postgres-global-setup.ts', 'test/support/server-bundle-setup.ts'],
    // A PostgreSQL suite's first hook starts its process's cluster: on a loaded 2-core machine that
    // alone took past 30 s.
    hookTimeout: WITH_PG ? 120_000 : 30_000,
    projects: [
      { extends: true, test: { name: 'shared', isolate: false, include: ['test/**/*.test.ts'], exclude: [...configDefaults.exclude, ...OWN_PROCESS, ...(WITH_PG ? [] : PG_SUITES)] } },
      { extends: true, test: { name: 'own-process', isolate: true, include: OWN_PROCESS } },
    ],
  },
});
