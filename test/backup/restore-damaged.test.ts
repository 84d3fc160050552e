import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BACKUP_EXIT_CODES, runBackupCli } from '../../server/backup/backup-cli.ts';
import { parseEnv } from '../../server/config/env.ts';
import { startInterlock } from '../../server/app/runtime.ts';
import { type Sandbox, startSandbox } from '../../server/sandbox/index.ts';
import { AGENT_TOKEN } from '../support/app-world.ts';
import { freePort, writeTestConfig, compiledEntry, compiledToolCommand } from '../support/server-process.ts';

/**
 * A backup whose journal fails the check a server makes at start (an entry changed after it was
 * written, its manifest's sha256 made to match, as a backup taken of a journal damaged already
 * would be): `npm run restore` refuses it, naming the damage, and puts nothing in place. Before,
 * it answered "restore done: … start the server" when the damage was on no refund Stripe listed,
 * and the server then refused to start on the journal it had put there.
 */

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
let sandbox: Sandbox;
let dir: string;
const backupDir = () => join(dir, 'backup');
const damagedDir = () => join(dir, 'damaged');

function restoreProcess(backup: string, dataDir: string): Promise<{ exit: string; out: string; err: string }> {
  const child = spawn(process.execPath, ['--enable-source-maps', compiledEntry('backup'), 'restore', backup], {
    cwd: repoRoot,
    env: { ...process.env, DATA_DIR: dataDir, INTERLOCK_CONFIG: join(dir, 'interlock.yaml'), STRIPE_SANDBOX_URL: sandbox.url, LOG_LEVEL: 'silent' },
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

/** Change the body of the journal's first entry (the start's CONFIG, on no refund) and make the manifest's sha256 match. */
function damageFirstEntry(folder: string): void {
  const file = join(folder, 'interlock.sqlite');
  const sqlite = new Database(file);
  sqlite.exec('DROP TRIGGER entries_no_update');
  sqlite.prepare("UPDATE entries SET body = replace(body, '\"cause\":\"start\"', '\"cause\":\"start \"') WHERE seq = 1").run();
  sqlite.exec("CREATE TRIGGER `entries_no_update` BEFORE UPDATE ON `entries`\nBEGIN\n\tSELECT RAISE(ABORT, 'entries is append-only');\nEND");
  sqlite.close();
  const manifestFile = join(folder, 'manifest.json');
  const manifest = JSON.parse(readFileSync(manifestFile, 'utf8'));
  const bytes = readFileSync(file);
  manifest.files.journal.sha256 = createHash('sha256').update(bytes).digest('hex');
  manifest.files.journal.bytes = bytes.length;
  writeFileSync(manifestFile, JSON.stringify(manifest, null, 2));
}

beforeAll(async () => {
  sandbox = await startSandbox({ port: 0 });
  dir = mkdtempSync(join(tmpdir(), 'interlock-restore-damaged-'));
  const env = { PORT: String(await freePort()), DATA_DIR: join(dir, 'data'), INTERLOCK_CONFIG: writeTestConfig(dir), STRIPE_SANDBOX_URL: sandbox.url, LOG_LEVEL: 'silent', SANDBOX_DEMO: '0' };
  const running = await startInterlock(parseEnv({ ...process.env, ...env }));
  try {
    const pi = (await sandbox.createPaymentIntent(10_000)).id;
    const answer = await fetch(`${running.url}/v1/refunds`, {
      method: 'POST',
      headers: { authorization: `Bearer ${AGENT_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ request_id: 'before-0', payment_intent: pi, amount: 1_000 }),
    });
    expect(((await answer.json()) as { status: string }).status).toBe('COMMITTED');
    const quiet = new Writable({ write: (_chunk, _encoding, done) => done() });
    expect(await runBackupCli([backupDir(), '--with-key'], { ...process.env, ...env }, { stdout: quiet, stderr: quiet })).toBe(BACKUP_EXIT_CODES.ok);
  } finally {
    await running.close();
  }
  cpSync(backupDir(), damagedDir(), { recursive: true });
  damageFirstEntry(damagedDir());
}, 60_000);

afterAll(async () => {
  await sandbox?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('npm run restore of a backup whose journal is damaged', () => {
  it('refuses, exit 2, naming the damage, and leaves no journal to start on', async () => {
    const dataDir = join(dir, 'into-empty');
    const run = await restoreProcess(damagedDir(), dataDir);
    const lastLine = run.err.trimEnd().split('\n').at(-1) ?? '';
    expect([run.exit, run.out.includes('restore done')]).toEqual(['2', false]);
    expect(lastLine).toMatch(/^restore refused: .*journal.*(guard|hash|damaged)/);
    expect(lastLine).toContain(compiledToolCommand('verify', '--journal'));
    expect(existsSync(join(dataDir, 'interlock.sqlite'))).toBe(false);
    expect(existsSync(join(dataDir, 'interlock.sqlite.restoring'))).toBe(false);
  }, 60_000);

  it('restores the same backup undamaged', async () => {
    const run = await restoreProcess(backupDir(), join(dir, 'into-empty-2'));
    expect([run.exit, run.out.trimEnd().split('\n').at(-1)?.startsWith('restore done: ')]).toEqual(['0', true]);
  }, 60_000);
});
