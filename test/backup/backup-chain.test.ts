import { appendFileSync, cpSync, existsSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { gunzipSync, gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqliteJournal } from '../../db/journal-store.ts';
import { MemoryDerivedTables } from '../../db/memory/derived.ts';
import { openDatabase } from '../../db/open.ts';
import { openStorage } from '../../db/sqlite-storage.ts';
import { EPOCH_CHAIN_ID, type EpochEntry } from '../../shared/entries.ts';
import { BACKUP_EXIT_CODES, runBackupCli, runRestoreCli } from '../../server/backup/backup-cli.ts';
import { sha256OfFile } from '../../server/backup/manifest.ts';
import { parseEnv } from '../../server/config/env.ts';
import { startInterlock } from '../../server/app/runtime.ts';
import { type Sandbox, startSandbox } from '../../server/sandbox/index.ts';
import { rebuildViews } from '../../server/views/rebuild.ts';
import { Views } from '../../server/views/views.ts';
import { scanAll } from '../fixtures/journals/replay.ts';
import { restoredLedgerViolations } from './restored-ledger.ts';
import { clientFor, freePort, type ServerProcess, startServerProcess, writeTestConfig } from '../support/server-process.ts';

/**
 * A full backup, then increments, each taken while a real server sends refunds; the server
 * stopped; the chain restored over its data folder and a server started on it: every agent asking
 * again is answered without a second send, Stripe (the sandbox, in this process) holds one refund
 * per payment, the refunds after the last increment are known again. A chain with a link missing,
 * changed or out of order is refused with nothing written.
 */

let sandbox: Sandbox;
let dir: string;
let env: Record<string, string>;
let server: ServerProcess | null = null;
const folder = (name: string) => join(dir, 'backups', name);
const journalFile = () => join(dir, 'data', 'interlock.sqlite');

beforeAll(async () => {
  sandbox = await startSandbox({ port: 0 });
  dir = mkdtempSync(join(tmpdir(), 'interlock-chain-'));
  const config = writeTestConfig(dir, { unpaced: true });
  // Checkpoints every few entries, so each increment carries some, and a mirror outside the data folder.
  appendFileSync(config, `\nintegrity: { checkpoint_every_entries: 5, mirrors: [{ file: ${join(dir, 'mirror.jsonl')} }] }\n`);
  env = { PORT: String(await freePort()), DATA_DIR: join(dir, 'data'), INTERLOCK_CONFIG: config, STRIPE_SANDBOX_URL: sandbox.url };
}, 30_000);

afterAll(async () => {
  server?.child.kill('SIGKILL');
  await sandbox.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A command's output and exit code, run in this process under the test's environment. */
async function command(run: typeof runBackupCli, args: string[], over: Record<string, string> = {}) {
  let out = '';
  let err = '';
  const sink = (write: (text: string) => void) =>
    new Writable({
      write(chunk, _encoding, done) {
        write(String(chunk));
        done();
      },
    });
  const code = await run(args, { ...process.env, ...env, ...over }, { stdout: sink((t) => (out += t)), stderr: sink((t) => (err += t)) });
  return { code, out, err };
}

/** A refusal: exit 2, its last line says why, and the data folder's journal is untouched. */
async function refused(args: string[], reason: RegExp): Promise<void> {
  const before = sha256OfFile(journalFile());
  const run = await command(runRestoreCli, [...args, '--replace']);
  expect(run.code, run.out).toBe(BACKUP_EXIT_CODES.refused);
  expect(run.err.trimEnd().split('\n').at(-1)).toMatch(reason);
  expect(sha256OfFile(journalFile())).toBe(before);
  expect(existsSync(`${journalFile()}.restoring`)).toBe(false);
}

let payments: { id: string }[] = [];
const pi = (i: number) => payments[i]!.id;
const ids = (prefix: string) => Array.from({ length: 4 }, (_, i) => `${prefix}-${i}`);

describe('incremental backups and a restore from the chain', () => {
  it('takes a full backup and increments under load, each holding only what came after the one before', async () => {
    server = await startServerProcess(env);
    const api = clientFor(server.url);
    payments = await Promise.all(Array.from({ length: 16 }, () => sandbox.createPaymentIntent(10_000)));
    const ask = async (id: string, i: number) => (await api.agent('POST', '/v1/refunds', { request_id: id, payment_intent: pi(i), amount: 1_000 })).body;
    const round = async (prefix: string, first: number) => (await Promise.all(ids(prefix).map((id, i) => ask(id, first + i)))).map((a) => a.status);
    expect(await round('r0', 0)).toEqual(Array(4).fill('COMMITTED'));
    expect((await command(runBackupCli, [folder('full'), '--with-key'])).code).toBe(BACKUP_EXIT_CODES.ok);
    expect(await round('r1', 4)).toEqual(Array(4).fill('COMMITTED'));
    // Under load: refunds go on while the increment reads the journal.
    const during = round('r2', 8);
    const inc1 = await command(runBackupCli, [folder('inc-1'), '--since', folder('full')]);
    expect(inc1.code, inc1.err).toBe(BACKUP_EXIT_CODES.ok);
    expect(inc1.out).toMatch(/^increment since .*full \(\d+ entries after seq \d+\)/);
    expect(await during).toEqual(Array(4).fill('COMMITTED'));
    const inc2 = await command(runBackupCli, [folder('inc-2'), '--since', folder('inc-1')]);
    expect(inc2.code, inc2.err).toBe(BACKUP_EXIT_CODES.ok);
    expect(await round('r3', 12)).toEqual(Array(4).fill('COMMITTED'));

    const manifest = (name: string) => JSON.parse(readFileSync(join(folder(name), 'manifest.json'), 'utf8'));
    const [full, first, second] = [manifest('full'), manifest('inc-1'), manifest('inc-2')];
    expect(Object.keys(second.files)).toEqual(['tail', 'config']);
    expect(second.base).toEqual({ dir: '../inc-1', manifest_sha256: sha256OfFile(join(folder('inc-1'), 'manifest.json')), journal_id: full.point.journal_id, entries: first.point.entries, last_seq: first.point.last_seq, global_head: first.point.global_head });
    expect(first.carried).toBe(first.point.entries - full.point.entries);
    expect(second.carried).toBe(second.point.entries - first.point.entries);
    expect(first.carried).toBeGreaterThan(0);
    await stopServer();
  }, 60_000);

  it('refuses a chain with an increment missing, changed, or out of order, writing nothing', async () => {
    // Missing: the increment the newest was taken since is gone.
    renameSync(folder('inc-1'), folder('away'));
    await refused([folder('inc-2')], /^restore refused: the increment .*inc-2 was taken since the backup in .*inc-1, which is missing/);
    renameSync(folder('away'), folder('inc-1'));

    // Changed: a byte of an increment's data file.
    const data = join(folder('inc-1'), 'increment.ndjson.gz');
    const bytes = readFileSync(data);
    const changed = Buffer.from(bytes);
    changed[changed.length - 12]! ^= 0xff;
    writeFileSync(data, changed);
    await refused([folder('inc-2')], /^restore refused: the backup's tail file .*inc-1\/increment.ndjson.gz is not the one the manifest names/);
    writeFileSync(data, bytes);

    // Out of order: the two increments swapped, each folder holding the other's.
    renameSync(folder('inc-1'), folder('swap'));
    renameSync(folder('inc-2'), folder('inc-1'));
    renameSync(folder('swap'), folder('inc-2'));
    await refused([folder('inc-1')], /^restore refused: the increment .*inc-1 was not taken since the backup now in .*inc-1 .*out of order/);
    renameSync(folder('inc-2'), folder('swap'));
    renameSync(folder('inc-1'), folder('inc-2'));
    renameSync(folder('swap'), folder('inc-1'));
  }, 60_000);

  it('refuses an increment whose entries do not continue the global chain, even with its sha256 made to match', async () => {
    const damaged = folder('inc-2-damaged');
    cpSync(folder('inc-2'), damaged, { recursive: true });
    const data = join(damaged, 'increment.ndjson.gz');
    const lines = gunzipSync(readFileSync(data)).toString('utf8').trimEnd().split('\n');
    const entry = JSON.parse(lines[1]!);
    entry.entry.globalHash = entry.entry.hash;
    lines[1] = JSON.stringify(entry);
    writeFileSync(data, gzipSync(`${lines.join('\n')}\n`));
    const manifestFile = join(damaged, 'manifest.json');
    const manifest = JSON.parse(readFileSync(manifestFile, 'utf8'));
    manifest.files.tail = { ...manifest.files.tail, sha256: sha256OfFile(data), bytes: readFileSync(data).length };
    writeFileSync(manifestFile, JSON.stringify(manifest, null, 2));
    await refused([damaged], /^restore refused: the increment .*inc-2-damaged: entry seq \d+ does not continue the global chain/);
    // Into a data folder with no key and no config: neither is put there.
    const elsewhere = { DATA_DIR: join(dir, 'elsewhere'), INTERLOCK_CONFIG: join(dir, 'elsewhere.yaml') };
    const run = await command(runRestoreCli, [damaged], elsewhere);
    expect(run.err.trimEnd().split('\n').at(-1)).toMatch(/^restore refused: .* does not continue the global chain/);
    expect([existsSync(join(dir, 'elsewhere', 'receipt-signing-key.pem')), existsSync(elsewhere.INTERLOCK_CONFIG), existsSync(join(dir, 'elsewhere', 'interlock.sqlite'))]).toEqual([false, false, false]);
  }, 60_000);

  it('restores the chain: the journal as it stood at the newest increment, no refund sent twice, the later ones known again', async () => {
    const restore = await command(runRestoreCli, [folder('inc-2'), '--replace']);
    expect(restore.code, restore.err).toBe(BACKUP_EXIT_CODES.ok);
    expect(restore.out).toMatch(/the chain: .*full <- .*inc-1 <- .*inc-2/);
    expect(restore.out).toMatch(/epoch 1 begins/);
    const point = JSON.parse(readFileSync(join(folder('inc-2'), 'manifest.json'), 'utf8')).point;

    const restored = openDatabase(journalFile());
    const journal = new SqliteJournal({ db: restored.db, wallClockMs: Date.now });
    const entries = await scanAll(journal);
    const [epoch] = (await journal.entries(EPOCH_CHAIN_ID)) as EpochEntry[];
    const named = (epoch!.stripe.refunds_not_in_backup as { effect_id: string }[]).map((r) => r.effect_id);
    expect(restoredLedgerViolations(entries, sandbox.refunds())).toEqual([]);
    restored.close();
    // Entry for entry the journal the server wrote, to the newest increment's point.
    const replaced = restore.out.match(/the journal that was there is kept as (\S+)/)![1]!;
    const before = openDatabase(replaced);
    const original = await scanAll(new SqliteJournal({ db: before.db, wallClockMs: Date.now }));
    before.close();
    expect(entries.slice(0, point.entries).map((e) => e.hash)).toEqual(original.slice(0, point.entries).map((e) => e.hash));
    expect(named.length).toBeGreaterThanOrEqual(4);

    // The derived tables came with the full backup: the journal's own, their cursor behind its head.
    const copied = await openStorage({ file: journalFile() });
    const [cursor, head] = [await copied.derived.cursor(), await copied.journal({ wallClockMs: Date.now }).head()];
    await copied.close();
    expect(cursor!.seq).toBeGreaterThan(0);
    expect(cursor!.seq).toBeLessThan(head!.seq);
    const events: string[] = [];
    const logStream = { write: (line: string) => void events.push((JSON.parse(line) as { event?: string }).event ?? '') };
    const running = await startInterlock(parseEnv({ ...process.env, ...env, LOG_LEVEL: 'info', SANDBOX_DEMO: '0' }), { logStream });
    const { inboxName } = running.services.config;
    try {
      const api = clientFor(running.url);
      for (const [round, first] of [['r0', 0], ['r1', 4], ['r2', 8], ['r3', 12]] as const) {
        for (const [i, id] of ids(round).entries()) {
          const answer = (await api.agent('POST', '/v1/refunds', { request_id: id, payment_intent: pi(first + i), amount: 1_000 })).body;
          expect(answer.status, id).toBe('DUPLICATE_IGNORED');
        }
      }
    } finally {
      await running.close();
    }
    for (const payment of payments) expect(sandbox.refunds(payment.id).map((r) => r.amount), payment.id).toEqual([1_000]);
    // Kept and caught up by replaying the tail, never rebuilt: the digests a rebuild from scratch gives.
    expect(events.filter((event) => event.startsWith('views_'))).toEqual([]);
    const after = await openStorage({ file: journalFile() });
    try {
      const journal = after.journal({ wallClockMs: Date.now });
      const views = new Views({ journal, inboxName, nowMs: Date.now, log: { fatal: () => {}, error: () => {}, info: (_fields, message) => events.push(message) }, derived: after.derived });
      expect(await views.replayAtStart()).toBeNull();
      expect(events.filter((event) => event.startsWith('views_') || event.includes('derived tables'))).toEqual([]);
      const scratch = await rebuildViews({ journal, tables: new MemoryDerivedTables(), inboxName });
      // A row per request the chain holds (r0 to r2); r3's refunds came after it, named by the epoch.
      expect(scratch.digests.find(({ view }) => view === 'ledger')?.rows).toBe(12);
      expect(await after.derived.digests()).toEqual(scratch.digests);
    } finally {
      await after.close();
    }
  }, 60_000);
});

async function stopServer(): Promise<void> {
  server?.child.kill('SIGTERM');
  await server?.exited;
  server = null;
}
