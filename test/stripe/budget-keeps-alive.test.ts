import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { compiledEntry } from '../support/compiled-entries.ts';

// A call waiting for its place is woken by one of the budget's timers (the share's first round,
// the next room in the window). When nothing else keeps the process up (a command's first Stripe
// call), that timer must: an unreferenced one let Node end the process with the call still waiting,
// exit 13 (a top-level await never settled) and nothing said.

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'interlock-budget-alive-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function runChild(file: string): Promise<{ code: string; out: string; err: string }> {
  const child = spawn(process.execPath, ['--enable-source-maps', compiledEntry('budget-wait-child'), file], { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
  return new Promise((resolve) =>
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ code: signal ?? String(code), out, err });
    }),
  );
}

describe('a call waiting for a place in a shared budget', () => {
  it('keeps its process alive until the place is granted, when nothing else would', async () => {
    for (let i = 0; i < 2; i++) {
      const run = await runChild(join(dir, `journal-${i}.sqlite`));
      expect({ code: run.code, out: run.out }, run.err).toEqual({ code: '0', out: 'granted\n' });
    }
  }, 60_000);
});
