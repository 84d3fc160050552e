import { existsSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BACKUP_EXIT_CODES, runBackupCli, runRestoreCli } from '../../server/backup/backup-cli.ts';
import { BackupError } from '../../server/backup/manifest.ts';
import { restoreBackup } from '../../server/backup/restore.ts';
import { parseEnv } from '../../server/config/env.ts';
import { type Running, startInterlock } from '../../server/app/runtime.ts';
import { startSandbox } from '../../server/sandbox/index.ts';
import { AGENT_TOKEN } from '../support/app-world.ts';
import { freePort, withOwnSecrets, writeTestConfig } from '../support/server-process.ts';

/**
 * A restore with the embedded sandbox (`npm start`'s default: the sandbox inside the server, its
 * state in DATA_DIR/sandbox.sqlite) and with Stripe test mode (an sk_test_ key, answered here by the
 * sandbox as test mode): the refunds made after the backup point are found by their effect id in
 * both, and a restore whose Stripe side is gone refuses, saying why.
 */

let dir: string;
let env: Record<string, string>;
let running: Running | null = null;
/** The effect ids of the refunds made after the backup. */
let after: string[] = [];
const backupDir = () => join(dir, 'backup');

async function command(run: typeof runBackupCli, args: string[], extra: Record<string, string> = {}) {
  let out = '';
  let err = '';
  const sink = (write: (text: string) => void) =>
    new Writable({
      write(chunk, _encoding, done) {
        write(String(chunk));
        done();
      },
    });
  const code = await run(args, { ...process.env, ...env, ...extra }, { stdout: sink((t) => (out += t)), stderr: sink((t) => (err += t)) });
  return { code, out, err };
}

async function refund(server: Running, id: string): Promise<string> {
  const pi = (await server.sandbox!.createPaymentIntent(10_000)).id;
  const answer = await fetch(`${server.url}/v1/refunds`, {
    method: 'POST',
    headers: { authorization: `Bearer ${AGENT_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ request_id: id, payment_intent: pi, amount: 1_000 }),
  });
  const body = (await answer.json()) as { status: string; effect_id: string };
  expect(body.status, id).toBe('COMMITTED');
  return body.effect_id;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'interlock-restore-modes-'));
  const config = writeTestConfig(dir, { unpaced: true });
  env = { PORT: String(await freePort()), SANDBOX_PORT: String(await freePort()), DATA_DIR: join(dir, 'data'), INTERLOCK_CONFIG: config, LOG_LEVEL: 'silent', SANDBOX_DEMO: '0' };
  // `npm start` as it starts by default, in this process: the embedded sandbox, its file in the data folder.
  running = await startInterlock(parseEnv({ ...process.env, ...env }));
  for (let i = 0; i < 2; i++) await refund(running, `before-${i}`);
  expect((await command(runBackupCli, [backupDir()])).code).toBe(BACKUP_EXIT_CODES.ok);
  after = [await refund(running, 'after-0'), await refund(running, 'after-1')];
  await running.close();
  running = null;
}, 60_000);

afterAll(async () => {
  await running?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('restore with the embedded sandbox', () => {
  it('finds the refunds made after the backup in the sandbox file the server left in the data folder', async () => {
    expect(existsSync(join(env.DATA_DIR!, 'sandbox.sqlite'))).toBe(true);
    const restore = await command(runRestoreCli, [backupDir(), '--replace']);
    expect(restore.code, restore.err).toBe(BACKUP_EXIT_CODES.ok);
    for (const effectId of after) expect(restore.out).toContain(effectId);
  });

  it('refuses when the sandbox file is gone, naming it: the refunds after the backup cannot be known', async () => {
    const file = join(env.DATA_DIR!, 'sandbox.sqlite');
    renameSync(file, `${file}.away`);
    try {
      const restore = await command(runRestoreCli, [backupDir(), '--replace']);
      expect(restore.code).toBe(BACKUP_EXIT_CODES.refused);
      expect(restore.err).toContain(file);
      expect(restore.err).toMatch(/refunds made after the backup point cannot be known/);
      // Nothing was made in its place, and the journal there is the one restored before.
      expect(existsSync(file)).toBe(false);
      expect(existsSync(`${join(env.DATA_DIR!, 'interlock.sqlite')}.restoring`)).toBe(false);
    } finally {
      renameSync(`${file}.away`, file);
    }
  });
});

describe('restore with Stripe test mode', () => {
  it('lists the refunds through an sk_test_ key (the sandbox answering as test mode) and finds those after the backup', async () => {
    const testMode = join(dir, 'interlock.test-mode.yaml');
    writeFileSync(testMode, withOwnSecrets(readFileSync(env.INTERLOCK_CONFIG!, 'utf8')).replace(/^stripe: \{ mode: sandbox,/m, 'stripe: { mode: test,'));
    // The embedded sandbox's state, served over HTTP: Stripe test mode as the restore reaches it.
    const stripe = await startSandbox({ port: 0, file: join(env.DATA_DIR!, 'sandbox.sqlite') });
    try {
      const url = new URL(stripe.url);
      const parsed = parseEnv({ ...process.env, ...env, INTERLOCK_CONFIG: testMode, STRIPE_SECRET_KEY: 'sk_test_interlock_restore', STRIPE_WEBHOOK_SECRETS: 'whsec_restore' });
      const result = await restoreBackup({ env: parsed, dir: backupDir(), replace: true, stripeEndpoint: { host: url.hostname, port: Number(url.port), protocol: 'http' } });
      expect(result.findings.refunds_not_in_backup.map((r) => r.effect_id)).toEqual(expect.arrayContaining(after));
      await expect(restoreBackup({ env: { ...parsed, stripeSecretKey: null }, dir: backupDir(), replace: true })).rejects.toThrow(BackupError);
    } finally {
      await stripe.close();
    }
  });
});
