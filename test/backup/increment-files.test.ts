import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqliteGrants } from '../../db/grants.ts';
import { SqliteCheckpoints } from '../../db/journal-checkpoints.ts';
import { SqliteJournal } from '../../db/journal-store.ts';
import { type OpenDatabase, openDatabase } from '../../db/open.ts';
import { Writable } from 'node:stream';
import { BACKUP_EXIT_CODES, runBackupCli } from '../../server/backup/backup-cli.ts';
import { takeBackup } from '../../server/backup/backup.ts';
import { applyIncrements, readChain } from '../../server/backup/chain.ts';
import { takeIncrement } from '../../server/backup/increment.ts';
import { MANIFEST_FILE } from '../../server/backup/manifest.ts';
import { proposed } from '../adversarial/outbox-harness.ts';
import { scanAll } from '../fixtures/journals/replay.ts';

/**
 * An increment's files and what it carries, on journals written through the stores (no server):
 * only the entries after its base, with their seals, and the small tables whole; laid on a copy of
 * the full backup it gives the journal entry for entry; refused for a journal other than its
 * base's, leaving nothing in its folder.
 */

const dir = mkdtempSync(join(tmpdir(), 'interlock-increment-'));
let source: OpenDatabase;
const envOf = (db: string) => ({ dbPath: db, dataDir: dir, configPath: join(dir, 'none.yaml'), receiptKeyPath: null, credentialsDirectory: null });
const env = envOf(join(dir, 'data', 'interlock.sqlite'));
const modeOf = (file: string) => statSync(file).mode & 0o777;

async function append(database: OpenDatabase, from: number, count: number): Promise<void> {
  const journal = new SqliteJournal({ db: database.db, wallClockMs: Date.now });
  for (let i = from; i < from + count; i++) await journal.append('PROPOSED', i.toString(16).padStart(12, '0'), proposed(`r-${i}`, 1_000));
}

beforeAll(async () => {
  // Left open, as a running server holds it, with entries in its write-ahead log.
  source = openDatabase(env.dbPath);
  await new SqliteCheckpoints(source.db).ensureJournalId();
  await append(source, 0, 3);
  await takeBackup({ env, dir: join(dir, 'full'), withKey: false });
  await append(source, 3, 2);
  await new SqliteGrants({ db: source.db, nowMs: Date.now }).grant('lease-1', { maxCents: 5_000 });
  await new SqliteCheckpoints(source.db).add({ epoch: 0, size: 5, head: 'h'.repeat(64), note: 'a note', signedAtMs: 1 });
});

afterAll(() => {
  source.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('an increment', () => {
  it('carries the entries after its base with their seals, and the small tables whole, in files its owner only reads', async () => {
    const { manifest } = await takeIncrement({ env, dir: join(dir, 'inc-1'), since: join(dir, 'full'), withKey: false });
    expect(manifest).toMatchObject({ carried: 2, point: { entries: 5, last_seq: 5, newest_checkpoint_id: 1 }, base: { dir: '../full', entries: 3, last_seq: 3 } });
    expect(readdirSync(join(dir, 'inc-1')).sort()).toEqual(['increment.ndjson.gz', MANIFEST_FILE]);
    for (const name of readdirSync(join(dir, 'inc-1'))) expect([name, modeOf(join(dir, 'inc-1', name))]).toEqual([name, 0o600]);
    const lines = gunzipSync(readFileSync(join(dir, 'inc-1', 'increment.ndjson.gz'))).toString('utf8').trimEnd().split('\n').map((line) => JSON.parse(line));
    expect(lines.slice(1).map((line) => line.entry.seq)).toEqual([4, 5]);
    expect(lines[0].tables).toMatchObject({ grants: [{ leaseId: 'lease-1', maxCents: 5_000 }], checkpoints: [{ id: 1, size: 5, note: 'a note' }], meta: [{ name: 'journal_id' }] });
  });

  it('of nothing new carries no entry, and its chain is laid on the full backup entry for entry', async () => {
    const { manifest } = await takeIncrement({ env, dir: join(dir, 'inc-2'), since: join(dir, 'inc-1'), withKey: false });
    expect(manifest.carried).toBe(0);
    // The checkpoints its base holds are not carried again.
    const [tables] = gunzipSync(readFileSync(join(dir, 'inc-2', 'increment.ndjson.gz'))).toString('utf8').split('\n');
    expect(JSON.parse(tables!).tables.checkpoints).toEqual([]);
    const copy = join(dir, 'copy.sqlite');
    copyFileSync(join(dir, 'full', 'interlock.sqlite'), copy);
    await applyIncrements(copy, readChain(join(dir, 'inc-2')));
    const laid = openDatabase(copy);
    const hashes = async (database: OpenDatabase) => (await scanAll(new SqliteJournal({ db: database.db, wallClockMs: Date.now }))).map((e) => e.hash);
    expect(await hashes(laid)).toEqual(await hashes(source));
    expect((await new SqliteCheckpoints(laid.db).all()).map((c) => c.note)).toEqual(['a note']);
    expect(await new SqliteGrants({ db: laid.db, nowMs: Date.now }).describe('lease-1')).toMatchObject({ max_cents: 5_000 });
    laid.close();
  });

  it('is refused where a checkpoint of the copy differs from the one it carries under that id', async () => {
    const copy = join(dir, 'copy-checkpoint.sqlite');
    copyFileSync(join(dir, 'full', 'interlock.sqlite'), copy);
    const planted = openDatabase(copy);
    await new SqliteCheckpoints(planted.db).add({ epoch: 0, size: 3, head: 'g'.repeat(64), note: 'another note', signedAtMs: 1 });
    planted.close();
    await expect(applyIncrements(copy, readChain(join(dir, 'inc-1')))).rejects.toThrow(/inc-1: checkpoint 1 differs from the one the journal already holds/);
  });

  it('is refused since a backup of another journal, leaving its folder empty', async () => {
    const other = envOf(join(dir, 'other', 'interlock.sqlite'));
    const database = openDatabase(other.dbPath);
    await new SqliteCheckpoints(database.db).ensureJournalId();
    await append(database, 100, 4);
    database.close();
    await expect(takeIncrement({ env: other, dir: join(dir, 'inc-other'), since: join(dir, 'full'), withKey: false })).rejects.toThrow(
      /is not the one the backup in .*full was taken of \(its id is [0-9a-f]{16}, the backup's [0-9a-f]{16}\): take a full backup/,
    );
    expect(readdirSync(join(dir, 'inc-other'))).toEqual([]);
  });

  it('is asked for with --since naming a folder: without one the command prints its usage, exit 64', async () => {
    let err = '';
    const sink = new Writable({
      write(chunk, _encoding, done) {
        err += String(chunk);
        done();
      },
    });
    expect(await runBackupCli([join(dir, 'inc-x'), '--since'], { ...process.env, DATA_DIR: join(dir, 'data') }, { stdout: sink, stderr: sink })).toBe(BACKUP_EXIT_CODES.usage);
    expect(err).toMatch(/--since <earlier backup>/);
  });
});
