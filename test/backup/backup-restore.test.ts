import { appendFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqliteJournal } from '../../db/journal-store.ts';
import { openDatabase } from '../../db/open.ts';
import { EPOCH_CHAIN_ID, type EpochEntry } from '../../shared/entries.ts';
import { BACKUP_EXIT_CODES, runBackupCli, runRestoreCli } from '../../server/backup/backup-cli.ts';
import { restoredLedgerViolations } from './restored-ledger.ts';
import { parseEnv } from '../../server/config/env.ts';
import { startInterlock } from '../../server/app/runtime.ts';
import { type Sandbox, startSandbox } from '../../server/sandbox/index.ts';
import { scanAll } from '../fixtures/journals/replay.ts';
import { clientFor, freePort, type ServerProcess, startServerProcess, writeTestConfig } from '../support/server-process.ts';

/**
 * A backup taken while a real server sends refunds, more refunds after it, the server stopped, the
 * backup restored over its data folder and the server started on it: Stripe (the sandbox, in this
 * process) holds one refund per payment, and the refunds made after the backup are known again.
 */

let sandbox: Sandbox;
let dir: string;
let env: Record<string, string>;
let server: ServerProcess | null = null;

beforeAll(async () => {
  sandbox = await startSandbox({ port: 0 });
  dir = mkdtempSync(join(tmpdir(), 'interlock-restore-'));
  const config = writeTestConfig(dir, { unpaced: true });
  // A checkpoint mirror that keeps what the server signed after the backup, as one outside the data folder would.
  appendFileSync(config, `\nintegrity: { checkpoint_every_entries: 5, mirrors: [{ file: ${join(dir, 'mirror.jsonl')} }] }\n`);
  env = { PORT: String(await freePort()), DATA_DIR: join(dir, 'data'), INTERLOCK_CONFIG: config, STRIPE_SANDBOX_URL: sandbox.url };
}, 30_000);

afterAll(async () => {
  server?.child.kill('SIGKILL');
  await sandbox.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A command's output and exit code, run in this process under the test's environment. */
async function command(run: typeof runBackupCli, args: string[]) {
  let out = '';
  let err = '';
  const sink = (write: (text: string) => void) => new Writable({
      write(chunk, _encoding, done) {
        write(String(chunk));
        done();
      },
    });
  const code = await run(args, { ...process.env, ...env }, { stdout: sink((t) => (out += t)), stderr: sink((t) => (err += t)) });
  return { code, out, err };
}

async function stop(): Promise<void> {
  server?.child.kill('SIGTERM');
  await server?.exited;
  server = null;
}

describe('backup and restore', () => {
  it('a backup under load, restored and started: no refund sent twice, the ones after the backup known again', async () => {
    server = await startServerProcess(env);
    const api = clientFor(server.url);
    const ask = async (id: string, pi: string) => (await api.agent('POST', '/v1/refunds', { request_id: id, payment_intent: pi, amount: 1_000 })).body;
    const payments = await Promise.all(Array.from({ length: 16 }, () => sandbox.createPaymentIntent(10_000)));
    const pi = (i: number) => payments[i]!.id;
    for (let i = 0; i < 4; i++) expect((await ask(`before-${i}`, pi(i))).status).toBe('COMMITTED');

    // Under load: refunds go on while the backup copies the journal.
    const during = Promise.all(Array.from({ length: 6 }, (_, i) => ask(`during-${i}`, pi(4 + i))));
    const backupDir = join(dir, 'backup');
    const backup = await command(runBackupCli, [backupDir, '--with-key']);
    expect(backup.code, backup.err).toBe(BACKUP_EXIT_CODES.ok);
    expect(backup.err).toMatch(/holds the receipt signing key/);
    const manifest = JSON.parse(readFileSync(join(backupDir, 'manifest.json'), 'utf8'));
    expect(Object.keys(manifest.files).sort()).toEqual(['config', 'journal', 'key']);
    expect(manifest.point).toMatchObject({ journal_id: expect.stringMatching(/^[0-9a-f]{16}$/), global_head: expect.any(String) });
    expect((await during).map((answer) => answer.status)).toEqual(Array(6).fill('COMMITTED'));

    const after = await Promise.all(Array.from({ length: 6 }, (_, i) => ask(`after-${i}`, pi(10 + i))));
    expect(after.map((answer) => answer.status)).toEqual(Array(6).fill('COMMITTED'));

    // Refused: a server has the journal open; a journal is there and --replace was not said.
    expect((await command(runRestoreCli, [backupDir, '--replace'])).err).toMatch(/open in another process/);
    await stop();
    const noReplace = await command(runRestoreCli, [backupDir]);
    expect(noReplace.code).toBe(BACKUP_EXIT_CODES.refused);
    expect(noReplace.err).toMatch(/already holds a journal.*--replace/);

    const restore = await command(runRestoreCli, [backupDir, '--replace']);
    expect(restore.code, restore.err).toBe(BACKUP_EXIT_CODES.ok);
    expect(restore.out).toMatch(/epoch 1 begins/);
    expect(restore.out).toMatch(/their agents ask again, and a person decides again/);

    // The epoch names every refund the backup did not know: all made after it, some made during it.
    const database = openDatabase(join(dir, 'data', 'interlock.sqlite'));
    const journal = new SqliteJournal({ db: database.db, wallClockMs: Date.now });
    const [epoch] = (await journal.entries(EPOCH_CHAIN_ID)) as EpochEntry[];
    const named = (epoch!.stripe.refunds_not_in_backup as { effect_id: string }[]).map((r) => r.effect_id);
    const afterIds = after.map((answer) => String(answer.effect_id));
    expect(named).toEqual(expect.arrayContaining(afterIds));
    expect(epoch!.stripe.receipts_after_backup).toEqual(named);
    expect(named.length).toBeLessThanOrEqual(12);
    expect(restoredLedgerViolations(await scanAll(journal), sandbox.refunds())).toEqual([]);
    database.close();
    expect(existsSync(join(dir, 'data', 'interlock.sqlite.restoring'))).toBe(false);

    // Started as `npm start` starts (runtime.ts), in this process: a second server process would only add its load time.
    const running = await startInterlock(parseEnv({ ...process.env, ...env, LOG_LEVEL: 'silent', SANDBOX_DEMO: '0' }));
    const restored = clientFor(running.url);
    // Every agent asks again: the refunds Stripe holds are known, none is sent again.
    for (const id of [...Array.from({ length: 6 }, (_, i) => `during-${i}`), ...Array.from({ length: 6 }, (_, i) => `after-${i}`)]) {
      const answer = (await restored.agent('POST', '/v1/refunds', { request_id: id, payment_intent: pi(Number(id.split('-')[1]) + (id.startsWith('after') ? 10 : 4)), amount: 1_000 })).body;
      expect(answer.status, id).toMatch(/^(DUPLICATE_IGNORED|COMMITTED|COMMITTED_ON_QUERY|COMMITTED_BY_RETRY)$/);
    }
    await stop();
    for (const payment of payments) expect(sandbox.refunds(payment.id).map((r) => r.amount), payment.id).toEqual([1_000]);
  }, 60_000);
});
