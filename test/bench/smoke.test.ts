import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { BENCH_JSON, BENCH_MD, type BenchReport, FIGURE_NAMES } from '../../bench/report.ts';

// The benchmark's smoke mode runs every stage at tiny sizes, so the bench cannot rot between full
// runs. Nothing here depends on speed: only that every figure was measured and nothing written.

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
/**
 * Generous: the smoke run starts two servers and two sandboxes, each a process of its own, and one
 * of its server processes has now and then not ended on SIGTERM, so the bench waited out its
 * 60 s bound (bench/processes.ts) before SIGKILL; the run then took about 240 s.
 */
const SMOKE_TIMEOUT_MS = 360_000;

function modifiedMs(file: string): number | null {
  return fs.existsSync(file) ? fs.statSync(file).mtimeMs : null;
}

function runSmoke(): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'bench/run.ts', '--smoke'], { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] });
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

describe('npm run bench -- --smoke', () => {
  it(
    'measures every figure and every profile at tiny sizes, and writes nothing to results/',
    async () => {
      const before = [modifiedMs(BENCH_JSON), modifiedMs(BENCH_MD)];
      const { code, stdout, stderr } = await runSmoke();
      expect(code, stderr).toBe(0);
      const report = JSON.parse(stdout.trim().split('\n').at(-1)!) as BenchReport;
      const unmeasured = FIGURE_NAMES.filter((name) => report.figures[name].error !== undefined || report.figures[name].samples.length === 0);
      expect(unmeasured, stderr).toEqual([]);
      expect(report.profiles.map((p) => p.name)).toHaveLength(4);
      expect(report.command).toBe('npm run bench -- --smoke');
      expect([modifiedMs(BENCH_JSON), modifiedMs(BENCH_MD)]).toEqual(before);
    },
    SMOKE_TIMEOUT_MS,
  );
});
