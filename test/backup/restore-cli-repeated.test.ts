import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BACKUP_EXIT_CODES, runBackupCli } from '../../server/backup/backup-cli.ts';
import { parseEnv } from '../../server/config/env.ts';
import { startInterlock } from '../../server/app/runtime.ts';
import { type Sandbox, startSandbox } from '../../server/sandbox/index.ts';
import { AGENT_TOKEN } from '../support/app-world.ts';
import { freePort, writeTestConfig, compiledEntry } from '../support/server-process.ts';

/**
 * `npm run restore -- <backup>` into an empty data folder, as its own process, ten times in a row on
 * one backup: each ends exit 0 with its last line saying the restore is done. Its first Stripe call
 * waits for the budget's first round, and nothing else keeps the process up then: a wake-up that
 * did not hold the process ended some of these with exit 13, nothing said, and only
 * `interlock.sqlite.restoring` left.
 */

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const RESTORES = 10;
let sandbox: Sandbox;
let dir: string;
const backupDir = () => join(dir, 'backup');

async function refund(url: string, id: string): Promise<void> {
  const pi = (await sandbox.createPaymentIntent(10_000)).id;
  const answer = await fetch(`${url}/v1/refunds`, {
    method: 'POST',
    headers: { authorization: `Bearer ${AGENT_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ request_id: id, payment_intent: pi, amount: 1_000 }),
  });
  expect(((await answer.json()) as { status: string }).status, id).toBe('COMMITTED');
}

/** `npm run restore -- <backup>` as a child process into `dataDir`: its exit, standard output and error. */
function restoreProcess(dataDir: string): Promise<{ exit: string; out: string; err: string }> {
  const child = spawn(process.execPath, ['--enable-source-maps', compiledEntry('backup'), 'restore', backupDir()], {
    cwd: repoRoot,
    env: { ...process.env, DATA_DIR: dataDir, INTERLOCK_CONFIG: join(dataDir, 'interlock.yaml'), STRIPE_SANDBOX_URL: sandbox.url, LOG_LEVEL: 'silent' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  return new Promise((resolve) =>
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ exit: signal ?? String(code), out, err });
    }),
  );
}

beforeAll(async () => {
  sandbox = await startSandbox({ port: 0 });
  dir = mkdtempSync(join(tmpdir(), 'interlock-restore-cli-'));
  // The shipped config's Stripe pace: the restore's budget shares the account through slot rows.
  const env = { PORT: String(await freePort()), DATA_DIR: join(dir, 'data'), INTERLOCK_CONFIG: writeTestConfig(dir), STRIPE_SANDBOX_URL: sandbox.url, LOG_LEVEL: 'silent', SANDBOX_DEMO: '0' };
  const running = await startInterlock(parseEnv({ ...process.env, ...env }));
  try {
    for (let i = 0; i < 2; i++) await refund(running.url, `before-${i}`);
    const quiet = new Writable({ write: (_chunk, _encoding, done) => done() });
    expect(await runBackupCli([backupDir(), '--with-key'], { ...process.env, ...env }, { stdout: quiet, stderr: quiet })).toBe(BACKUP_EXIT_CODES.ok);
    for (let i = 0; i < 2; i++) await refund(running.url, `after-${i}`);
  } finally {
    await running.close();
  }
}, 60_000);

afterAll(async () => {
  await sandbox?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('npm run restore, ten times in a row', () => {
  it('ends each time with exit 0 and a last line saying the restore is done', async () => {
    const ends: string[] = [];
    for (let i = 0; i < RESTORES; i++) {
      const dataDir = join(dir, `empty-${i}`);
      const run = await restoreProcess(dataDir);
      const lastLine = run.out.trimEnd().split('\n').at(-1) ?? '';
      ends.push(`${run.exit} ${lastLine.startsWith('restore done: ') ? 'done' : JSON.stringify(`${lastLine} | ${run.err.trimEnd().split('\n').at(-1)}`)}`);
      expect(existsSync(join(dataDir, 'interlock.sqlite.restoring')), `restore ${i}`).toBe(run.exit !== '0');
    }
    expect(ends).toEqual(Array(RESTORES).fill('0 done'));
  }, 240_000);
});
