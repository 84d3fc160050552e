import { readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ReloadOutcome } from './reload.ts';

// How `npm run reload` finds the running server and hears its answer: through the data folder,
// which only the server's own user can write, rather than a port anyone on the machine can reach.

/** The running server's process id, written once it listens, removed when it stops. */
export const PID_FILE = 'interlock.pid';
/** The answer to the last reload: what it changed, or why it was refused. */
export const RELOAD_ANSWER_FILE = 'reload-answer.json';

/** What the server writes after each reload; `n` counts the reloads of the process `pid`. */
export type ReloadAnswer = ReloadOutcome & { pid: number; n: number; at: string };

/** Say this process is the running server. */
export function writePidFile(dataDir: string): void {
  writeAtomically(join(dataDir, PID_FILE), `${process.pid}\n`);
}

/** Stop saying so, unless another process has said so since. */
export function removePidFile(dataDir: string): void {
  const path = join(dataDir, PID_FILE);
  if (readPid(dataDir) === process.pid) rmSync(path, { force: true });
}

/**
 * Whether a process's command line is an Interlock server's: the sources through tsx
 * (`server/main.ts`) or the compiled server production runs (`dist/server/main.js`).
 */
export function isInterlockServerCommand(command: string): boolean {
  return /(^|[\s/])server\/main\.[jt]s(\s|$)/.test(command);
}

/** The pid the data folder names, or null when none does. */
export function readPid(dataDir: string): number | null {
  try {
    const pid = Number(readFileSync(join(dataDir, PID_FILE), 'utf8').trim());
    return Number.isSafeInteger(pid) && pid > 0 ? pid : null;
  } catch {
    return null;
  }
}

/** Write a reload's answer for `npm run reload` to read. */
export function writeReloadAnswer(dataDir: string, answer: ReloadAnswer): void {
  writeAtomically(join(dataDir, RELOAD_ANSWER_FILE), `${JSON.stringify(answer, null, 2)}\n`);
}

/** The last reload's answer, or null when there is none (or it is being written). */
export function readReloadAnswer(dataDir: string): ReloadAnswer | null {
  try {
    const answer: unknown = JSON.parse(readFileSync(join(dataDir, RELOAD_ANSWER_FILE), 'utf8'));
    return isReloadAnswer(answer) ? answer : null;
  } catch {
    return null;
  }
}

function isReloadAnswer(value: unknown): value is ReloadAnswer {
  return typeof value === 'object' && value !== null && 'pid' in value && 'n' in value && 'outcome' in value && typeof value.n === 'number';
}

/** A reader sees the old file or the new one, never half of one. */
function writeAtomically(path: string, text: string): void {
  const temporary = `${path}.${process.pid}.tmp`;
  writeFileSync(temporary, text, { mode: 0o600 });
  renameSync(temporary, path);
}
