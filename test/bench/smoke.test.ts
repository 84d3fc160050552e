import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { BENCH_JSON, BENCH_MD, type BenchReport, FIGURE_NAMES, type Figure, recordStageRun, renderBenchMarkdown } from '../../bench/report.ts';

// The benchmark runs end to end inside `npm test` on one short stage, so it cannot rot between full
// runs: `npm run bench -- --smoke --only gate` starts as a person would start it, runs the gate at
// tiny sizes, and prints its report, which must be the format `--record` merges into
// results/bench.json and renders into results/bench.md. Nothing here depends on speed: only that
// every figure of the stage was measured and nothing written. `npm run bench -- --smoke` runs every
// stage at tiny sizes (several minutes on 2 cores).

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
const SMOKE_TIMEOUT_MS = 120_000;
const STAGE = 'gate';
/** The figures the gate stage owns, headline and detail. */
const GATE_FIGURES = /^(gate_|naive_)/;

function modifiedMs(file: string): number | null {
  return fs.existsSync(file) ? fs.statSync(file).mtimeMs : null;
}

function runStage(): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'bench/run.ts', '--smoke', '--only', STAGE], { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), SMOKE_TIMEOUT_MS - 5_000);
  return new Promise((resolve) =>
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    }),
  );
}

describe('npm run bench -- --smoke --only gate', () => {
  it(
    'measures every figure of the stage, prints a report results/bench.md can be rendered from, and writes nothing to results/',
    async () => {
      const before = [modifiedMs(BENCH_JSON), modifiedMs(BENCH_MD)];
      const { code, stdout, stderr } = await runStage();
      expect(code, stderr).toBe(0);
      const report = JSON.parse(stdout.trim().split('\n').at(-1)!) as BenchReport;
      expect(report.command).toBe(`npm run bench -- --smoke --only ${STAGE}`);
      expect(report.repetitions).toBe(1);
      expect(report.machine.cpus).toBeGreaterThan(0);

      const measured: Record<string, Figure> = { ...report.figures, ...report.details };
      const names = Object.keys(measured);
      expect(names.filter((name) => !GATE_FIGURES.test(name)), 'figures of other stages').toEqual([]);
      expect(names.filter((name) => (FIGURE_NAMES as readonly string[]).includes(name)).sort()).toEqual(['gate_effects_per_s', 'gate_p99_ms', 'naive_effects_per_s']);
      const unmeasured = names.filter((name) => measured[name]!.error !== undefined || measured[name]!.samples.length === 0 || measured[name]!.median === null);
      expect(unmeasured, stderr).toEqual([]);
      expect(measured.gate_effects_per_s!.samples.every((value) => Number.isFinite(value) && value > 0)).toBe(true);

      // The printed report is what `--record` merges into the whole run's and renders.
      const whole = JSON.parse(fs.readFileSync(BENCH_JSON, 'utf8')) as BenchReport;
      const merged = recordStageRun(whole, report, whole.notes);
      expect(merged.stage_runs?.at(-1)).toMatchObject({ command: report.command, figures: names });
      const markdown = renderBenchMarkdown(merged);
      expect(markdown).toContain(report.command);
      expect(markdown).toContain('`gate_effects_per_s`');

      expect([modifiedMs(BENCH_JSON), modifiedMs(BENCH_MD)]).toEqual(before);
    },
    SMOKE_TIMEOUT_MS,
  );
});
