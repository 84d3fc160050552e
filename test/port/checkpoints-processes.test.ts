import { spawn } from 'node:child_process';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { SqliteCheckpoints } from '../../db/journal-checkpoints.ts';
import { cleanUpDatabases, openTempDatabase } from '../support/db-journals.ts';
import { compiledScript } from '../support/compiled-entries.ts';

// The checkpoints contract's race (test/port/checkpoints.contract.ts) between two real processes
// on one SQLite file: each adds checkpoints as its view catches up, one a step behind the other,
// and the store never keeps one smaller than the newest.

afterEach(cleanUpDatabases);

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
const racerScript = fileURLToPath(new URL('./support/checkpoint-racer.ts', import.meta.url));
const ADDS = 300;

function racer(file: string, first: number, step: number, planted: boolean) {
  const args = [compiledScript(racerScript), file, String(first), String(step), String(ADDS), ...(planted ? ['planted'] : [])];
  const child = spawn(process.execPath, ['--enable-source-maps', ...args], { cwd: repoRoot, stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = readline.createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  const next = async (step: string) => {
    const line = await lines.next();
    if (line.done) throw new Error(`the racer ended before saying ${step}`);
    const message = JSON.parse(line.value) as { step: string; kept?: number };
    if (message.step !== step) throw new Error(`the racer said ${line.value}, not ${step}`);
    return message;
  };
  return { child, next, exited };
}

/** Two racers on one file, released together; the checkpoints kept, and how many each was told it kept. */
async function race(planted: boolean) {
  const { file } = openTempDatabase();
  // One process signs sizes 2, 4, 6, …; the other 1, 3, 5, …: a step behind, then ahead.
  const racers = [racer(file, 2, 2, planted), racer(file, 1, 2, planted)];
  await Promise.all(racers.map((r) => r.next('ready')));
  for (const r of racers) r.child.stdin.write('go\n');
  const done = await Promise.all(racers.map((r) => r.next('done')));
  expect(await Promise.all(racers.map((r) => r.exited))).toEqual([0, 0]);
  return { kept: await new SqliteCheckpoints(openTempDatabase(file).db).all(), told: done.reduce((sum, d) => sum + (d.kept ?? 0), 0) };
}

function expectNeverBackwards({ kept, told }: Awaited<ReturnType<typeof race>>): void {
  const sizes = kept.map((c) => c.size);
  expect(sizes).toEqual([...sizes].sort((a, b) => a - b));
  expect(new Set(sizes).size).toBe(sizes.length);
  expect(told).toBe(kept.length);
  expect(sizes.at(-1)).toBe(2 * ADDS);
}

describe('checkpoints added by two processes on one file', () => {
  it('never go backwards, and every one kept is one a process was told was kept', async () => {
    expectNeverBackwards(await race(false));
  }, 60_000);

  it.fails('added as a store that checks outside its transaction would, they go backwards', async () => {
    // About 145 of the 600 land behind the newest in a run.
    expectNeverBackwards(await race(true));
  }, 60_000);
});
