import { type ChildProcessByStdio, spawn } from 'node:child_process';
import readline from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { compiledScript } from './compiled-entries.ts';

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
const childScript = fileURLToPath(new URL('../db/support/race-child.ts', import.meta.url));

/** What a racer process reported when it finished. */
export type RaceOutcome = Record<string, unknown>;

interface Racer {
  child: ChildProcessByStdio<Writable, Readable, null>;
  lines: AsyncIterator<string>;
  exited: Promise<number | null>;
}

function startRacer(script: string, args: string[]): Racer {
  const child = spawn(process.execPath, ['--enable-source-maps', compiledScript(script), ...args], {
    cwd: repoRoot,
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  const lines = readline.createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  return { child, lines, exited };
}

async function expectStep(racer: Racer, step: string): Promise<RaceOutcome> {
  const next = await racer.lines.next();
  if (next.done) throw new Error(`racer ${racer.child.pid} ended before "${step}"`);
  const message = JSON.parse(next.value) as RaceOutcome;
  if (message.step !== step) throw new Error(`racer ${racer.child.pid} said ${next.value}, expected "${step}"`);
  return message;
}

async function allSay(racers: Racer[], step: string): Promise<RaceOutcome[]> {
  return Promise.all(racers.map((racer) => expectStep(racer, step)));
}

function tellAll(racers: Racer[], word: string): void {
  for (const racer of racers) racer.child.stdin.write(`${word}\n`);
}

/**
 * Run one real OS process per owner against the database `file` (or, with another racer `script`,
 * whatever names the database for it, such as a PostgreSQL URL). Every racer is started, then all
 * open the database together (racing a SQLite file's migration), then all are released into `op`
 * together. Returns each racer's outcome, in owner order.
 */
export async function raceProcesses(file: string, op: 'dispatch' | 'claim', effectId: string, owners: string[], script = childScript): Promise<RaceOutcome[]> {
  const racers = owners.map((owner) => startRacer(script, [file, op, effectId, owner]));
  try {
    await allSay(racers, 'started');
    tellAll(racers, 'open');
    await allSay(racers, 'ready');
    tellAll(racers, 'go');
    const outcomes = await allSay(racers, 'done');
    const codes = await Promise.all(racers.map((racer) => racer.exited));
    if (codes.some((code) => code !== 0)) throw new Error(`racers exited with ${codes.join(', ')}`);
    return outcomes;
  } finally {
    // A racer left waiting by a failed step would outlive the test; end only the ones we started.
    for (const racer of racers) if (racer.child.exitCode === null) racer.child.kill();
  }
}
