import { createHash } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { SqliteJournal } from '../../db/journal-store.ts';
import { openDatabase } from '../../db/open.ts';
import { takeBackup } from '../../server/backup/backup.ts';
import { MANIFEST_FILE, sha256OfFile } from '../../server/backup/manifest.ts';
import { proposed } from '../adversarial/outbox-harness.ts';
import { writeReceiptKey, writeTestConfig } from '../support/server-process.ts';

/**
 * The files a journal and its backups are made of: readable by their owner only, and a backup
 * folder holding exactly the files its manifest lists (the journal copy one file, checkpointed).
 */

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'interlock-backup-files-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const modeOf = (file: string) => statSync(file).mode & 0o777;

/** A journal with entries, left open (as a running server holds it) with entries in its write-ahead log. */
async function journalWithEntries(file: string) {
  const database = openDatabase(file);
  const journal = new SqliteJournal({ db: database.db, wallClockMs: Date.now });
  for (let i = 0; i < 3; i++) {
    await journal.append('PROPOSED', `00000000000${i}`, proposed(`r-${i}`, 1_000));
  }
  return database;
}

describe('journal files', () => {
  it('a new journal, its write-ahead log and index are 0600 whatever the umask', () => {
    const file = join(dir, 'new', 'interlock.sqlite');
    const before = process.umask(0o022);
    try {
      const database = openDatabase(file);
      database.sqlite.exec('CREATE TABLE IF NOT EXISTS t (x)');
      database.sqlite.exec('INSERT INTO t VALUES (1)');
      for (const suffix of ['', '-wal', '-shm']) expect([suffix, modeOf(`${file}${suffix}`)]).toEqual([suffix, 0o600]);
      database.close();
    } finally {
      process.umask(before);
    }
  });

  it('a journal left 0644 is narrowed to 0600 when opened', () => {
    const file = join(dir, 'old.sqlite');
    openDatabase(file).close();
    chmodSync(file, 0o644);
    openDatabase(file).close();
    expect(modeOf(file)).toBe(0o600);
  });
});

describe('a backup folder', () => {
  it('holds only the files its manifest lists and the manifest, each 0600, the journal copy whole in one file', async () => {
    const data = join(dir, 'data');
    const database = await journalWithEntries(join(data, 'interlock.sqlite'));
    try {
      const backupDir = join(dir, 'backup');
      const before = process.umask(0o022);
      let result: Awaited<ReturnType<typeof takeBackup>>;
      try {
        result = await takeBackup({
          env: { dbPath: join(data, 'interlock.sqlite'), dataDir: data, configPath: writeTestConfig(dir), receiptKeyPath: writeReceiptKey(join(dir, 'key.pem')), credentialsDirectory: null },
          dir: backupDir,
          withKey: true,
        });
      } finally {
        process.umask(before);
      }
      const listed = Object.values(result.manifest.files).map((f) => f.name);
      expect(readdirSync(backupDir).sort()).toEqual([...listed, MANIFEST_FILE].sort());
      expect(modeOf(backupDir)).toBe(0o700);
      for (const name of readdirSync(backupDir)) expect([name, modeOf(join(backupDir, name))]).toEqual([name, 0o600]);
      for (const file of Object.values(result.manifest.files)) expect(sha256OfFile(join(backupDir, file.name))).toBe(file.sha256);
      expect(result.manifest.point.entries).toBe(3);
      // Nothing of it sits in a write-ahead log: read from the copy alone, it holds every entry.
      const copy = readFileSync(join(backupDir, 'interlock.sqlite'));
      expect(copy.subarray(18, 20)).toEqual(Buffer.from([1, 1]));
    } finally {
      database.close();
    }
  });
});

describe('a file hashed for a manifest', () => {
  // A journal of 10,000,000 entries is an 18 GB file, and reading it whole failed past 2 GiB
  // ("File size is greater than 2 GiB"): it is read a megabyte at a time, so the hash must not
  // depend on where the megabytes end.
  it('hashes a file of several chunks, a short last one included, as its whole bytes hash', () => {
    const file = join(dir, 'chunks.bin');
    const bytes = Buffer.alloc(3 * (1 << 20) + 7);
    for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 31 + (i >> 20)) & 0xff;
    writeFileSync(file, bytes);
    expect(sha256OfFile(file)).toBe(createHash('sha256').update(bytes).digest('hex'));
    writeFileSync(file, '');
    expect(sha256OfFile(file)).toBe(createHash('sha256').digest('hex'));
  });
});

describe('an empty folder made beforehand', () => {
  it('is narrowed to 0700 when the backup goes into it, as a folder the backup makes is', async () => {
    const data = join(dir, 'data-premade');
    const database = await journalWithEntries(join(data, 'interlock.sqlite'));
    try {
      const backupDir = join(dir, 'premade');
      mkdirSync(backupDir, { mode: 0o755 });
      chmodSync(backupDir, 0o755);
      await takeBackup({
        env: { dbPath: join(data, 'interlock.sqlite'), dataDir: data, configPath: writeTestConfig(dir), receiptKeyPath: null, credentialsDirectory: null },
        dir: backupDir,
        withKey: false,
      });
      expect(modeOf(backupDir)).toBe(0o700);
    } finally {
      database.close();
    }
  });
});

describe('the systemd units', () => {
  it('make every file of the service and the backup its user only (UMask=0077)', () => {
    for (const unit of ['interlock.service', 'interlock-backup.service']) {
      expect([unit, readFileSync(join(repoRoot, 'infra', unit), 'utf8')]).toEqual([unit, expect.stringMatching(/^UMask=0077$/m)]);
    }
  });
});
