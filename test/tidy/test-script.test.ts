import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

// scripts/test.sh (`npm test`) run in a copy of its folder layout, with an `npx` of our own first on
// the PATH that takes a known time per phase and leaves the counts the script reads, so its
// summary can be checked without running the suite itself.

const script = fileURLToPath(new URL('../../scripts/test.sh', import.meta.url));
const roots: string[] = [];

const FAKE_NPX = `#!/usr/bin/env bash
case "$1" in
  vitest)
    out=
    for arg in "$@"; do case "$arg" in --outputFile.json=*) out=\${arg#--outputFile.json=} ;; esac; done
    if [ "$out" = test-results/vitest-pg.json ]; then
      # The PostgreSQL suites: asked for by name, after the vitest suite had ended.
      [ "\${INTERLOCK_PG_SUITES:-}" = 1 ] && [ -f test-results/vitest.json ] && touch test-results/pg-after
      echo '{"numPassedTests":4,"numFailedTests":0,"numTotalTestSuites":1,"success":true}' > "$out"
    else
      # Beside: the journeys started before the vitest suite ended.
      sleep 3
      [ -f test-results/playwright.started ] && touch test-results/journeys-beside
      echo '{"numPassedTests":3,"numFailedTests":0,"numTotalTestSuites":2,"success":true}' > "$out"
    fi ;;
  playwright)
    touch test-results/playwright.started
    sleep 3
    echo '{"stats":{"expected":2,"unexpected":0,"flaky":0}}' > test-results/e2e.json ;;
esac
exit 0
`;

function layout(root = fs.mkdtempSync(path.join(os.tmpdir(), 'interlock-test-script-')), ensurePostgres = 'exit 0\n'): string {
  roots.push(root);
  fs.mkdirSync(path.join(root, 'scripts'));
  fs.mkdirSync(path.join(root, 'e2e'));
  fs.mkdirSync(path.join(root, 'bin'));
  fs.copyFileSync(script, path.join(root, 'scripts/test.sh'));
  fs.writeFileSync(path.join(root, 'scripts/ensure-chromium.sh'), 'exit 0\n');
  fs.writeFileSync(path.join(root, 'scripts/ensure-postgres.sh'), ensurePostgres);
  fs.writeFileSync(path.join(root, 'e2e/one.spec.ts'), '');
  fs.writeFileSync(path.join(root, 'bin/npx'), FAKE_NPX, { mode: 0o755 });
  // The type-check runs the project's TypeScript by path (node node_modules/typescript/bin/tsc): one that passes.
  fs.mkdirSync(path.join(root, 'node_modules/typescript/bin'), { recursive: true });
  fs.writeFileSync(path.join(root, 'node_modules/typescript/bin/tsc'), '// a type-check that finds nothing\n');
  return root;
}

afterAll(() => {
  for (const root of roots) fs.rmSync(root, { recursive: true, force: true });
});

/** Run the copied scripts/test.sh in `dir`, our npx first on the PATH, CI set as given (unset when undefined). */
function runIn(dir: string, ci?: string) {
  const env: NodeJS.ProcessEnv = { ...process.env, PATH: `${path.join(dir, 'bin')}${path.delimiter}${process.env.PATH}` };
  delete env.CI;
  if (ci !== undefined) env.CI = ci;
  return spawnSync('bash', [path.join(dir, 'scripts/test.sh')], { cwd: dir, env, encoding: 'utf8', timeout: 30_000 });
}

/** What ensure-postgres.sh does on a machine without PostgreSQL where it cannot install it (not root). */
const POSTGRES_MISSING = "echo 'the PostgreSQL suites need PostgreSQL 15, which is missing' >&2\nexit 1\n";

describe('npm test (scripts/test.sh)', () => {
  it('prints the seconds of each phase, then the closing line CI reads', () => {
    const dir = layout();
    const run = spawnSync('bash', [path.join(dir, 'scripts/test.sh')], {
      cwd: dir,
      env: { ...process.env, PATH: `${path.join(dir, 'bin')}${path.delimiter}${process.env.PATH}` },
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(run.status, run.stderr).toBe(0);
    const lines = run.stdout.trim().split('\n');
    // The vitest suite's 3, the PostgreSQL suites' 4 and the journeys' 2.
    expect(lines.at(-1)).toBe('9 passed, 0 failed');
    const phases = /^phase seconds: vitest (\d+), build (\d+), postgres (\d+), journeys (\d+) \(wall (\d+)\)$/.exec(lines.at(-2) ?? '');
    expect(phases, run.stdout).not.toBeNull();
    const [vitest, build, postgres, journeys, wall] = phases!.slice(1).map(Number) as [number, number, number, number, number];
    // Each phase counted on its own: the fake vitest and the fake journeys take three seconds each.
    expect(vitest).toBeGreaterThanOrEqual(3);
    expect(journeys).toBeGreaterThanOrEqual(3);
    expect(vitest + build + postgres + journeys).toBeLessThan(20);
    expect(wall).toBeGreaterThanOrEqual(3);
    // The journeys ran beside the vitest suite: they had started before it ended.
    expect(fs.existsSync(path.join(dir, 'test-results/journeys-beside'))).toBe(true);
    // The PostgreSQL suites ran in a phase of their own, after the vitest suite, asked for by name.
    expect(fs.existsSync(path.join(dir, 'test-results/pg-after'))).toBe(true);
  });

  it('locally, without PostgreSQL, passes: the PostgreSQL suites are skipped (one line says so), not a failed step', () => {
    const run = runIn(layout(undefined, POSTGRES_MISSING));
    expect(run.status, run.stdout + run.stderr).toBe(0);
    expect(run.stdout).not.toMatch(/failed steps/);
    expect(run.stdout.trim().split('\n').at(-1)).toBe('9 passed, 0 failed');
  });

  it('with CI=true, without PostgreSQL, fails the run, naming the step', () => {
    const run = runIn(layout(undefined, POSTGRES_MISSING), 'true');
    expect(run.status).not.toBe(0);
    expect(run.stdout).toMatch(/^failed steps: postgres$/m);
  });
});
