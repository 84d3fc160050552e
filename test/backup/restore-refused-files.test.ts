import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
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
import { tamper } from '../support/tamper.ts';
import { freePort, writeTestConfig, compiledEntry } from '../support/server-process.ts';

// docs/operators/backups.md: a restore that ends `restore refused: …` or `restore failed: …` has
// restored nothing. Into a data folder lost whole (no config, no key, no journal), a backup the
// restore refuses must leave that folder and the config's place as they were: a config or a key
// left there is taken, at the next restore of an earlier backup, over that backup's own.

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
let sandbox: Sandbox;
let dir: string;
const backupDir = () => join(dir, 'backup');
const damagedDir = () => join(dir, 'damaged');

function restoreProcess(backup: string, dataDir: string, configPath: string, sandboxUrl: string): Promise<{ exit: string; out: string; err: string }> {
  const child = spawn(process.execPath, ['--enable-source-maps', compiledEntry('backup'), 'restore', backup], {
    cwd: repoRoot,
    env: { ...process.env, DATA_DIR: dataDir, INTERLOCK_CONFIG: configPath, STRIPE_SANDBOX_URL: sandboxUrl, LOG_LEVEL: 'silent' },
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

/** The first entry's body changed, the manifest's sha256 made to match: a backup of a journal damaged already. */
function damageFirstEntry(folder: string): void {
  const file = join(folder, 'interlock.sqlite');
  tamper(file, (sqlite) => {
    sqlite.prepare("UPDATE entries SET body = replace(body, '\"cause\":\"start\"', '\"cause\":\"start \"') WHERE seq = 1").run();
  });
  const manifestFile = join(folder, 'manifest.json');
  const manifest = JSON.parse(readFileSync(manifestFile, 'utf8'));
  const bytes = readFileSync(file);
  manifest.files.journal.sha256 = createHash('sha256').update(bytes).digest('hex');
  manifest.files.journal.bytes = bytes.length;
  writeFileSync(manifestFile, JSON.stringify(manifest, null, 2));
}

beforeAll(async () => {
  sandbox = await startSandbox({ port: 0 });
  dir = mkdtempSync(join(tmpdir(), 'interlock-restore-refused-'));
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

/** What is in a folder, none when it is not there. */
const listed = (folder: string) => (existsSync(folder) ? readdirSync(folder).sort() : []);

describe('a restore that ends refused or failed, into a data folder lost whole', () => {
  it('a backup whose journal is damaged: refused, and neither the key nor the config is left in place', async () => {
    const dataDir = join(dir, 'lost-1');
    const configPath = join(dir, 'lost-1.yaml');
    const run = await restoreProcess(damagedDir(), dataDir, configPath, sandbox.url);
    expect([run.exit, run.err.trimEnd().split('\n').at(-1)?.startsWith('restore refused: ')]).toEqual(['2', true]);
    expect({ data: listed(dataDir), config: existsSync(configPath) }).toEqual({ data: [], config: false });
  }, 60_000);

  it('a Stripe that cannot be read: failed, and neither the key nor the config is left in place', async () => {
    const dataDir = join(dir, 'lost-2');
    const configPath = join(dir, 'lost-2.yaml');
    const run = await restoreProcess(backupDir(), dataDir, configPath, `http://127.0.0.1:${await freePort()}`);
    expect(run.exit).toBe('2');
    expect(run.out.includes('restore done')).toBe(false);
    expect({ data: listed(dataDir), config: existsSync(configPath) }).toEqual({ data: [], config: false });
  }, 60_000);
});
