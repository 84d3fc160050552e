import { type ChildProcess, spawn } from 'node:child_process';
import { createPublicKey, type KeyObject } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { SqliteGrants } from '../../db/grants.ts';
import { SqliteJournal } from '../../db/journal-store.ts';
import { openDatabase } from '../../db/open.ts';
import type { Entry } from '../../shared/entries.ts';
import type { KillPoint } from '../../server/gate/kill-points.ts';
import { PUBLIC_KEY_FILE } from '../../server/receipts/keys.ts';
import type { SignedReceipt } from '../../server/receipts/receipts.ts';
import { connectSandbox, type RemoteSandbox } from '../../server/sandbox/index.ts';
import { compiledEntry, compiledScript } from './compiled-entries.ts';

/** The crash tests' processes, by real SIGKILL: a sandbox that outlives them and the Interlock children. */

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const childScript = fileURLToPath(new URL('./crash-child.ts', import.meta.url));

/** How long the children own a send or a recovery; short, so a restart may recover soon after a death. */
export const CRASH_CLAIM_TTL_MS = 1_000;
/** A child that runs longer than this is stuck, not slow. */
const childTimeoutMs = 20_000;
/** How long the sandbox may take to print its ready line, and to stop on SIGTERM. */
const sandboxStartMs = 15_000;
const sandboxStopMs = 5_000;

const running = new Set<ChildProcess>();
const tempDirs: string[] = [];

/** A fresh temp folder, removed by `stopCrashProcesses`. */
export function makeCrashDir(prefix: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `interlock-crash-${prefix}-`));
  tempDirs.push(dir);
  return dir;
}

/** The sandbox in its own process. */
export interface SandboxProcess {
  url: string;
  remote: RemoteSandbox;
  child: ChildProcess;
}

/** Start `server/sandbox/main.ts` with durable state in a temp folder and wait for its ready line. */
export async function startSandboxProcess(): Promise<SandboxProcess> {
  const dir = makeCrashDir('sandbox');
  const child = spawn(process.execPath, ['--enable-source-maps', compiledEntry('sandbox')], {
    cwd: repoRoot,
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', SANDBOX_FILE: path.join(dir, 'sandbox.sqlite'), SANDBOX_SETTLE: 'immediate' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  child.once('exit', () => running.delete(child));
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    let err = '';
    const timer = setTimeout(() => reject(new Error(`sandbox: no ready line in ${sandboxStartMs} ms; stderr: ${err}`)), sandboxStartMs);
    child.stderr!.on('data', (chunk: Buffer) => {
      err += chunk.toString('utf8');
    });
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString('utf8');
      const line = out.split('\n').find((l) => l.startsWith('{'));
      if (line === undefined) return;
      clearTimeout(timer);
      resolve((JSON.parse(line) as { url: string }).url);
    });
    child.once('exit', (code, signal) => reject(new Error(`sandbox exited (${code ?? signal}) before it was ready: ${err}`)));
  });
  return { url, remote: connectSandbox(url), child };
}

/** What a child did: how it ended, and the JSON line it printed (null when it printed none). */
export interface ChildResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  said: Record<string, unknown> | null;
  stderr: string;
}

/** One Interlock process over `dbFile`, optionally SIGKILLed at `killAt`. */
export async function runChild(world: { dbFile: string; sandboxUrl: string }, args: string[], killAt?: KillPoint): Promise<ChildResult> {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    INTERLOCK_DB: world.dbFile,
    SANDBOX_URL: world.sandboxUrl,
    INTERLOCK_CLAIM_TTL_MS: String(CRASH_CLAIM_TTL_MS),
  };
  delete env.INTERLOCK_KILL_AT;
  if (killAt !== undefined) env.INTERLOCK_KILL_AT = killAt;
  const child = spawn(process.execPath, ['--enable-source-maps', compiledScript(childScript), ...args], { cwd: repoRoot, env, stdio: ['ignore', 'pipe', 'pipe'] });
  running.add(child);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    stdout += chunk.toString('utf8');
  });
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr += chunk.toString('utf8');
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), childTimeoutMs);
  const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) => {
    child.once('close', (c, s) => resolve([c, s]));
  });
  clearTimeout(timer);
  running.delete(child);
  const line = stdout.trim().split('\n').at(-1);
  return { code, signal, said: line ? (JSON.parse(line) as Record<string, unknown>) : null, stderr };
}

/** Wait out the claim a process that died at `diedAtMs` may still hold. */
export async function waitOutClaim(diedAtMs: number): Promise<void> {
  const waitMs = diedAtMs + CRASH_CLAIM_TTL_MS + 50 - Date.now();
  if (waitMs > 0) await new Promise((resolve) => setTimeout(resolve, waitMs));
}

/** Grant a lease in a journal database, as an operator would before the agent runs. */
export async function grantLease(dbFile: string, leaseId: string, maxCents: number): Promise<void> {
  const opened = openDatabase(dbFile);
  try {
    await new SqliteGrants({ db: opened.db, nowMs: () => Date.now() }).grant(leaseId, { maxCents });
  } finally {
    opened.close();
  }
}

/** What the journal file holds after the children: its open dispatches and every effect's chain. */
export async function readJournal(dbFile: string, effectId: string): Promise<{ inFlight: string[]; entries: Entry[] }> {
  const opened = openDatabase(dbFile);
  try {
    const journal = new SqliteJournal({ db: opened.db, wallClockMs: () => Date.now() });
    return { inFlight: await journal.inFlight(), entries: await journal.entries(effectId) };
  } finally {
    opened.close();
  }
}

/** The signed receipts the children wrote next to the database, and the public key to check them with. */
export function readReceipts(dbFile: string): { receipts: SignedReceipt[]; publicKey: KeyObject } {
  const dir = path.dirname(dbFile);
  const receipts = fs
    .readdirSync(dir)
    .filter((name) => /^receipt-[0-9a-f]{12}\.json$/.test(name))
    .map((name) => JSON.parse(fs.readFileSync(path.join(dir, name), 'utf8')) as SignedReceipt);
  return { receipts, publicKey: createPublicKey(fs.readFileSync(path.join(dir, PUBLIC_KEY_FILE), 'utf8')) };
}

/** Stop every process the crash tests started (each by its own handle) and remove their folders. */
export async function stopCrashProcesses(): Promise<void> {
  await Promise.all(
    [...running].map(
      (child) =>
        new Promise<void>((resolve) => {
          if (child.exitCode !== null || child.signalCode !== null) return resolve();
          const force = setTimeout(() => child.kill('SIGKILL'), sandboxStopMs);
          child.once('exit', () => {
            clearTimeout(force);
            resolve();
          });
          child.kill('SIGTERM');
        }),
    ),
  );
  running.clear();
  for (const dir of tempDirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
}
