import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPgToolStorage } from '../../db/server-storage.ts';
import { EPOCH_CHAIN_ID, type EpochEntry } from '../../shared/entries.ts';
import { verifyReceipt } from '../../shared/receipts/verify.ts';
import { BACKUP_EXIT_CODES, runRestoreCli } from '../../server/backup/backup-cli.ts';
import { decideRestoreStep } from '../../server/backup/restore-plan.ts';
import { restoreInPlace } from '../../server/backup/restore-in-place.ts';
import { parseEnv } from '../../server/config/env.ts';
import { PUBLIC_KEY_FILE } from '../../server/receipts/keys.ts';
import { type Sandbox, startSandbox } from '../../server/sandbox/index.ts';
import { dropPgDatabase, emptyPgDatabase, POSTGRES_BIN, type PgDatabase, postgresCluster, postgresOrSkip } from '../support/postgres.ts';
import { clientFor, freePort, type ServerProcess, startServerProcess, writeTestConfig } from '../support/server-process.ts';

// A PostgreSQL database restored as an operator restores it: a server sends refunds, the database
// is dumped with pg_dump, more refunds go out, the server stops, the dump is put into a new
// database with pg_restore, and `npm run restore -- --in-place` runs Interlock's own steps on it.
// The refunds made after the dump are journaled as committed, a new epoch begins, and a server
// started on it sends none of them again and hands out receipts that verify.

const available = postgresOrSkip('the restore in place on PostgreSQL (test/db/pg-restore.test.ts)');

const run = promisify(execFile);

/** A PostgreSQL program of the cluster, run as the cluster's user over its socket (pg_dump, pg_restore); its standard output. */
async function asClusterUser(program: 'pg_dump' | 'pg_restore', args: string[], input?: Buffer): Promise<Buffer> {
  const cluster = await postgresCluster();
  const file = join(POSTGRES_BIN, program);
  const all = ['-h', cluster.socketDir, '-p', String(cluster.port), '-U', 'postgres', ...args];
  const [command, commandArgs] = process.getuid?.() === 0 ? ['runuser', ['-u', 'postgres', '--', file, ...all]] : [file, all];
  if (input === undefined) return (await run(command, commandArgs, { encoding: 'buffer', maxBuffer: 64 * 1024 * 1024 })).stdout;
  return new Promise((resolve, reject) => {
    const child = spawn(command, commandArgs, { stdio: ['pipe', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve(Buffer.alloc(0)) : reject(new Error(`${program} exited ${code}: ${err}`))));
    child.stdin.end(input);
  });
}

/** A command's output and exit code, run in this process. */
async function restoreCommand(args: string[], env: Record<string, string>) {
  let out = '';
  let err = '';
  const sink = (write: (text: string) => void) =>
    new Writable({
      write(chunk, _encoding, done) {
        write(String(chunk));
        done();
      },
    });
  const code = await runRestoreCli(args, { ...process.env, ...env }, { stdout: sink((t) => (out += t)), stderr: sink((t) => (err += t)) });
  return { code, out, err };
}

/** The journal's head, its epochs and the chains of `ids`, read as a tool reads them. */
async function journalOf(database: PgDatabase, ids: readonly string[] = []) {
  const { storage } = await openPgToolStorage({ url: database.appUrl, tool: 'test' });
  try {
    const journal = storage.journal({ wallClockMs: Date.now });
    const chains = new Map(await Promise.all(ids.map(async (id) => [id, await journal.entries(id)] as const)));
    return { head: await journal.head(), epochs: (await journal.entries(EPOCH_CHAIN_ID)) as EpochEntry[], chains };
  } finally {
    await storage.close();
  }
}

type Client = ReturnType<typeof clientFor>;

/**
 * Ask for a refund as an agent does: once, then its status until the answer is final. A server
 * just started may hold no share of the Stripe budget yet and answer 202 QUEUED (its turn to come).
 */
async function refund(api: Client, body: { request_id: string; payment_intent: string; amount: number }) {
  let answer = await api.agent('POST', '/v1/refunds', body);
  const deadline = Date.now() + 30_000;
  while (answer.status === 202 && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    answer = await api.agent('GET', `/v1/refunds/${body.request_id}`);
  }
  return answer.body;
}

describe.skipIf(!available)('npm run restore -- --in-place on PostgreSQL', () => {
  let sandbox: Sandbox;
  let dir: string;
  let live: PgDatabase;
  let restored: PgDatabase;
  let env: Record<string, string>;
  let server: ServerProcess | null = null;

  beforeAll(async () => {
    sandbox = await startSandbox({ port: 0 });
    dir = mkdtempSync(join(tmpdir(), 'interlock-pg-restore-'));
    live = await emptyPgDatabase('restore_live');
    restored = await emptyPgDatabase('restore_restored');
    env = {
      PORT: String(await freePort()),
      DATA_DIR: join(dir, 'data'),
      INTERLOCK_CONFIG: writeTestConfig(dir, { unpaced: true }),
      STRIPE_SANDBOX_URL: sandbox.url,
      DATABASE_URL: live.appUrl,
      DATABASE_MIGRATE_URL: live.ownerUrl,
    };
  }, 60_000);

  afterAll(async () => {
    server?.child.kill('SIGKILL');
    if (server !== null) await server.exited;
    await sandbox?.close();
    for (const database of [live, restored]) if (database !== undefined) await dropPgDatabase(database);
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  const stop = async () => {
    server?.child.kill('SIGTERM');
    await server?.exited;
    server = null;
  };

  it('journals the refunds made after the dump as committed, begins epoch 1, all or nothing; a server then starts on it', async () => {
    server = await startServerProcess(env);
    const api = clientFor(server.url);
    const payments = await Promise.all(Array.from({ length: 6 }, () => sandbox.createPaymentIntent(10_000)));
    const ask = (id: string, i: number) => refund(api, { request_id: id, payment_intent: payments[i]!.id, amount: 1_000 });
    const before = [await ask('before-0', 0), await ask('before-1', 1)];
    expect(before.map((answer) => answer.status)).toEqual(['COMMITTED', 'COMMITTED']);
    const dump = await asClusterUser('pg_dump', ['-Fc', '-d', live.name]);
    const after = await Promise.all([2, 3, 4].map((i) => ask(`after-${i}`, i)));
    expect(after.map((answer) => answer.status)).toEqual(['COMMITTED', 'COMMITTED', 'COMMITTED']);
    const afterIds = after.map((answer) => String(answer.effect_id));

    // Refused while a server is connected to the database; nothing is written.
    const busy = await restoreCommand(['--in-place'], env);
    expect(busy.code, busy.err).toBe(BACKUP_EXIT_CODES.refused);
    expect(busy.err).toMatch(/^restore refused: \d+ connections of Interlock servers are open on postgresql:\/\/interlock_app@.*stop every server/m);
    await stop();

    // The dump put back into a new database, the one DATABASE_URL now names.
    await asClusterUser('pg_restore', ['--exit-on-error', '-d', restored.name], dump);
    const restoredEnv = { ...env, DATABASE_URL: restored.appUrl, DATABASE_MIGRATE_URL: restored.ownerUrl };
    const dumped = await journalOf(restored);

    // Cut short after Stripe was read and the epoch was written aside: the database is as it was.
    let calls = 0;
    const cutShort = () => {
      calls += 1;
      if (calls === 3) throw new Error('cut short');
      return Date.now();
    };
    await expect(restoreInPlace({ env: parseEnv({ ...process.env, ...restoredEnv }), wallMs: cutShort })).rejects.toThrow(/cut short/);
    expect((await journalOf(restored)).head).toEqual(dumped.head);

    // Run again: done, in one go.
    const done = await restoreCommand(['--in-place'], restoredEnv);
    expect(done.code, done.err).toBe(BACKUP_EXIT_CODES.ok);
    expect(done.out).toMatch(/epoch 1 begins/);
    expect(done.out).toMatch(/^restore done: postgresql:\/\/interlock_app@.* is the journal restored, epoch 1; start the servers\.$/m);
    for (const id of afterIds) expect(done.out).toContain(`  ${id}  `);

    const now = await journalOf(restored, afterIds);
    expect(now.epochs.length).toBe(1);
    const named = (now.epochs[0]!.stripe.refunds_not_in_backup as { effect_id: string }[]).map((r) => r.effect_id).sort();
    expect(named).toEqual([...afterIds].sort());
    for (const id of afterIds) expect(decideRestoreStep(now.chains.get(id) ?? []), id).not.toBe('commit');

    // A server started on the restored database: every agent asks again, nothing is sent twice, and receipts verify.
    server = await startServerProcess({ ...restoredEnv, PORT: String(await freePort()) });
    const again = clientFor(server.url);
    for (const [id, i] of [['before-0', 0], ['after-2', 2], ['after-3', 3], ['after-4', 4]] as const) {
      const answer = await refund(again, { request_id: id, payment_intent: payments[i]!.id, amount: 1_000 });
      expect(answer.status, id).toMatch(/^(DUPLICATE_IGNORED|COMMITTED|COMMITTED_ON_QUERY|COMMITTED_BY_RETRY)$/);
    }
    const fresh = await refund(again, { request_id: 'fresh-5', payment_intent: payments[5]!.id, amount: 1_000 });
    expect(fresh.status).toBe('COMMITTED');
    const keys = new Map<string, string>();
    const publicKeyPem = readFileSync(join(env.DATA_DIR!, PUBLIC_KEY_FILE), 'utf8');
    // A refund first asked after the dump is known from Stripe alone, with no request to sign for (docs/operators/backups.md).
    for (const id of [String(before[0]!.effect_id), String(before[1]!.effect_id), String(fresh.effect_id)]) {
      const receipt = (await again.agent('GET', `/v1/receipts/${id}`)).body;
      keys.set(String(receipt.key_id), publicKeyPem);
      const report = await verifyReceipt(receipt, keys);
      expect(report.valid, `${id}: ${JSON.stringify(report)}`).toBe(true);
      expect(report.happened_once, id).toBe(true);
    }
    await stop();
    for (const payment of payments) expect(sandbox.refunds(payment.id).map((r) => r.amount), payment.id).toEqual([1_000]);
  }, 90_000);

  it('refuses a database that is not at this schema, changing nothing', async () => {
    const bare = await emptyPgDatabase('restore_bare');
    try {
      const refused = await restoreCommand(['--in-place'], { ...env, DATABASE_URL: bare.appUrl, DATABASE_MIGRATE_URL: bare.ownerUrl });
      expect(refused.code).toBe(BACKUP_EXIT_CODES.refused);
      expect(refused.err).toMatch(/^restore refused: .*/m);
      expect(refused.err).toMatch(/schema|migrat/);
    } finally {
      await dropPgDatabase(bare);
    }
  });
});
