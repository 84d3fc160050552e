import { type ChildProcessByStdio, spawn } from 'node:child_process';
import readline from 'node:readline';
import type { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { SqliteJournal } from '../../db/journal-store.ts';
import { cleanUpDatabases, effectIdOf, fakeClock, openTempDatabase, tempDbFile } from '../support/db-journals.ts';
import { compiledScript } from '../support/compiled-entries.ts';

// A real process keeps hundreds of group-committed writes in flight and prints each entry's hash
// when its promise resolves; it is SIGKILLed mid-run, several times over one file. Whatever a
// caller was told is written must be in the file afterwards, and every chain must still verify.

afterEach(cleanUpDatabases);

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
const childScript = fileURLToPath(new URL('../support/bench-append-child.ts', import.meta.url));

/** Chains the writes spread over: few enough that batches often extend one chain many times. */
const EFFECTS = 40;
const IN_FLIGHT = 300;
/** Acknowledgements to wait for before the kill: well into the run, far from its end. */
const ACKS_BEFORE_KILL = 2_000;
const WRITES_MAX = 1_000_000;
const ROUNDS = 3;
/** A child that has not acknowledged enough writes in this long is stuck, not slow. */
const ROUND_TIMEOUT_MS = 60_000;

interface Round {
  acknowledged: string[];
  signal: NodeJS.Signals | null;
}

/** Run one writer on `file`, SIGKILL it once it has acknowledged `ACKS_BEFORE_KILL` writes. */
async function runAndKill(file: string): Promise<Round> {
  const child: ChildProcessByStdio<null, Readable, Readable> = spawn(
    process.execPath,
    ['--enable-source-maps', compiledScript(childScript), file, String(IN_FLIGHT), String(WRITES_MAX), String(EFFECTS)],
    { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<NodeJS.Signals | null>((resolve) => child.once('exit', (_code, signal) => resolve(signal)));
  const acknowledged: string[] = [];
  const timer = setTimeout(() => child.kill('SIGKILL'), ROUND_TIMEOUT_MS);
  try {
    for await (const line of readline.createInterface({ input: child.stdout })) {
      if (line.startsWith('{')) throw new Error(`the writer finished before it was killed: ${line}`);
      acknowledged.push(line);
      if (acknowledged.length === ACKS_BEFORE_KILL) child.kill('SIGKILL');
    }
  } finally {
    clearTimeout(timer);
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
  const signal = await exited;
  if (acknowledged.length < ACKS_BEFORE_KILL) throw new Error(`writer ended after ${acknowledged.length} writes: ${stderr}`);
  return { acknowledged, signal };
}

describe('group commit under SIGKILL', () => {
  it(
    'every write acknowledged before a SIGKILL is in the reopened file, and every chain verifies',
    async () => {
      const file = tempDbFile();
      const acknowledged: string[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        const result = await runAndKill(file);
        expect(result.signal).toBe('SIGKILL');
        acknowledged.push(...result.acknowledged);
      }

      const { db, sqlite } = openTempDatabase(file);
      const stored = new Set(sqlite.prepare('SELECT hash FROM entries').pluck().all() as string[]);
      const lost = acknowledged.filter((hash) => !stored.has(hash));
      expect(lost).toEqual([]);
      // Writes in flight at the kill may or may not have landed; either way each chain is whole.
      expect(stored.size).toBeGreaterThanOrEqual(acknowledged.length);
      const journal = new SqliteJournal({ db, ...fakeClock() });
      let chained = 0;
      for (let n = 1; n <= EFFECTS; n++) chained += (await journal.entries(effectIdOf(n))).length;
      expect(chained).toBe(stored.size);
    },
    ROUNDS * ROUND_TIMEOUT_MS,
  );
});

describe('group commit and the gate under SIGKILL', () => {
  const gateChild = fileURLToPath(new URL('../support/gate-send-kill-child.ts', import.meta.url));

  /** Run a gate process that SIGKILLs itself at send number `killAt`; the effect ids it started to send. */
  async function sendsUntilKilled(file: string, killAt: number): Promise<{ sent: string[]; signal: NodeJS.Signals | null }> {
    const child = spawn(process.execPath, ['--enable-source-maps', compiledScript(gateChild), file, '64', String(killAt)], { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const sent: string[] = [];
    const timer = setTimeout(() => child.kill('SIGKILL'), ROUND_TIMEOUT_MS);
    const exited = new Promise<NodeJS.Signals | null>((resolve) => child.once('exit', (_code, signal) => resolve(signal)));
    for await (const line of readline.createInterface({ input: child.stdout })) sent.push(line);
    clearTimeout(timer);
    const signal = await exited;
    if (sent.length < killAt) throw new Error(`the gate process ended after ${sent.length} sends: ${stderr}`);
    return { sent, signal };
  }

  it(
    'no send starts before its DISPATCHED is durable: a process killed at a send, with 64 submitters, left every sent effect dispatched',
    async () => {
      for (const killAt of [1, 150, 700]) {
        const file = tempDbFile();
        const { sent, signal } = await sendsUntilKilled(file, killAt);
        expect(signal).toBe('SIGKILL');
        const { sqlite } = openTempDatabase(file);
        const dispatched = new Set(sqlite.prepare("SELECT effect_id FROM entries WHERE kind = 'DISPATCHED'").pluck().all() as string[]);
        expect(sent.filter((effectId) => !dispatched.has(effectId))).toEqual([]);
        // The send the process died in was never answered, so its dispatch is still open: recovery's to settle.
        const closed = new Set(sqlite.prepare("SELECT effect_id FROM entries WHERE closes = 1").pluck().all() as string[]);
        expect(closed.has(sent.at(-1)!)).toBe(false);
        // Batches of concurrent submitters were really shared: more effects were dispatched than sent one by one.
        if (killAt > 1) expect(dispatched.size).toBeGreaterThanOrEqual(sent.length);
      }
    },
    3 * ROUND_TIMEOUT_MS,
  );
});
