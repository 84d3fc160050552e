import { spawn } from 'node:child_process';
import { REPO_ROOT } from './processes.ts';

/** A start-up that takes longer than this is stuck, not slow. */
const CHILD_TIMEOUT_MS = 15 * 60_000;
/** Heap for the cold computation, which holds every entry of the journal at once. */
const COLD_HEAP_MIB = 8_192;

/** Run bench/rebuild-child.ts in a fresh process and return the JSON it printed. */
export function runRebuildChild(args: string[], options: { heapMib?: number; cpuProfDir?: string } = {}): Promise<Record<string, number>> {
  const nodeArgs = [
    ...(options.heapMib ? [`--max-old-space-size=${options.heapMib}`] : []),
    ...(options.cpuProfDir ? ['--cpu-prof', '--cpu-prof-dir', options.cpuProfDir] : []),
  ];
  const child = spawn(process.execPath, [...nodeArgs, '--import', 'tsx', 'bench/rebuild-child.ts', ...args], {
    cwd: REPO_ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-10_000);
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), CHILD_TIMEOUT_MS);
  return new Promise((resolve, reject) => {
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      const line = stdout.trim().split('\n').at(-1) ?? '';
      if (code !== 0 || !line.startsWith('{')) reject(new Error(`rebuild child ${args[0]} ended ${signal ?? code}: ${stderr.trim().split('\n').slice(-3).join(' / ')}`));
      else resolve(JSON.parse(line) as Record<string, number>);
    });
  });
}

/** One start-up over `journal`: open, replay into the views, recover and sweep, ready. */
export function measureRebuild(journal: string, configPath: string, dataDir: string, cpuProfDir?: string): Promise<Record<string, number>> {
  return runRebuildChild(['rebuild', journal, configPath, dataDir], cpuProfDir ? { cpuProfDir } : {});
}

/** computeScoreboard over every entry of `journal`, loaded first. */
export function measureColdScoreboard(journal: string, configPath: string): Promise<Record<string, number>> {
  return runRebuildChild(['cold', journal, configPath], { heapMib: COLD_HEAP_MIB });
}
