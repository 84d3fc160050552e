import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { REPO_ROOT } from './processes.ts';

/** A command that takes longer than this is stuck, not slow. */
const TOOL_TIMEOUT_MS = 60 * 60_000;

/**
 * One of the operators' commands, as its npm script runs it (`tsx <script> <args>`), timed from
 * spawn to exit. A non-zero exit fails the stage with the command's last lines.
 */
export function runTool(script: string, args: string[], env: Record<string, string>): Promise<{ seconds: number; stdout: string }> {
  const startMs = performance.now();
  const child = spawn(process.execPath, ['--import', 'tsx', script, ...args], { cwd: REPO_ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    stdout = (stdout + chunk.toString()).slice(-20_000);
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-10_000);
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), TOOL_TIMEOUT_MS);
  return new Promise((resolve, reject) =>
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      const seconds = (performance.now() - startMs) / 1000;
      if (code === 0) resolve({ seconds, stdout });
      else reject(new Error(`${script} ${args.join(' ')} ended ${signal ?? code}: ${`${stderr}\n${stdout}`.trim().split('\n').slice(-3).join(' / ')}`));
    }),
  );
}

/** Bytes of every file under `dir`. */
export function bytesUnder(dir: string): number {
  let total = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const at = path.join(entry.parentPath, entry.name);
    total += entry.isDirectory() ? bytesUnder(at) : fs.statSync(at).size;
  }
  return total;
}

/** Bytes of a journal database with its WAL, if any. */
export function journalBytes(file: string): number {
  return [file, `${file}-wal`].filter((f) => fs.existsSync(f)).reduce((sum, f) => sum + fs.statSync(f).size, 0);
}
