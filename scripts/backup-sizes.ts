// `tsx scripts/backup-sizes.ts [entries] [increment entries]`: the bytes per journal entry of a
// full backup and of an increment, and the time each takes, measured on a journal generated as
// the bench generates one (chains copied from a short run of a real server, in the bench's mix),
// and the time a restore takes to lay the increment on the full backup's copy. The figures in
// docs/operators/backups.md come from its output.
import { createHash, generateKeyPairSync } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { gzipSync } from 'node:zlib';
import { httpStage } from '../bench/http-stage.ts';
import { generateJournal } from '../bench/journal-gen.ts';
import { SMOKE } from '../bench/plans.ts';
import { takeBackup } from '../server/backup/backup.ts';
import { applyIncrements, readChain } from '../server/backup/chain.ts';
import { takeIncrement } from '../server/backup/increment.ts';
import { signCheckpoint } from '../server/integrity/checkpoint.ts';
import { originOf } from '../server/integrity/epoch.ts';
import { keyIdFor } from '../server/receipts/keys.ts';

const [entriesArg = '200000', incrementArg = '20000'] = process.argv.slice(2);
const entries = Number(entriesArg);
const incremented = Number(incrementArg);
if (!(entries > 0 && incremented > 0)) throw new Error('usage: tsx scripts/backup-sizes.ts [entries] [increment entries]');

/**
 * The bytes an increment spends per signed checkpoint it carries, gzipped as it writes them: 1,000
 * checkpoints signed as a server signs them, in the increment's first line.
 */
function checkpointBytes(): number {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const key = { keyId: keyIdFor(publicKey), privateKey };
  const origin = originOf('0123456789abcdef', 0);
  const checkpoints = Array.from({ length: 1_000 }, (_, i) => {
    const head = createHash('sha256').update(String(i)).digest('hex');
    return { id: i + 1, epoch: 0, size: (i + 1) * 1_000, head, note: signCheckpoint({ origin, size: (i + 1) * 1_000, head }, key), signedAtMs: 1_765_000_000_000 + i * 60_000 };
  });
  return gzipSync(`${JSON.stringify({ tables: { meta: [], checkpoints, grants: [] } })}\n`).length / checkpoints.length;
}

/**
 * The disk the documented retention needs, at most, for a journal of 1M and 10M entries that grew
 * to that over a year: every full backup as big as the journal, every daily increment a whole
 * month of entries, every hourly one a whole day, and a checkpoint signed every minute (the most
 * `checkpoint_every_seconds: 60` signs while entries come). Before increments: 96 full backups (48
 * hourly, 35 daily, 13 monthly); with them: the 13 monthly ones full, the rest increments.
 */
function retention(fullPerEntry: number, incrementPerEntry: number, perCheckpoint: number): void {
  const gib = (bytes: number) => `${(bytes / 2 ** 30).toFixed(1)} GiB`;
  const checkpointsPerDay = 24 * 60;
  for (const journal of [1_000_000, 10_000_000]) {
    const perDay = journal / 365;
    const full = fullPerEntry * journal;
    const day = perDay * incrementPerEntry + checkpointsPerDay * perCheckpoint;
    const before = 96 * full;
    const daily = 35 * 31 * day;
    const hourly = 48 * day;
    console.log(`retention at ${journal} entries (${Math.round(perDay)} a day): full backups only ${gib(before)}; with increments ${gib(13 * full + daily + hourly)} (13 full ${gib(13 * full)}, 35 daily ${gib(daily)}, 48 hourly ${gib(hourly)})`);
  }
}

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'interlock-backup-sizes-'));
const timed = async <T>(work: () => Promise<T>): Promise<{ value: T; ms: number }> => {
  const started = performance.now();
  const value = await work();
  return { value, ms: performance.now() - started };
};
try {
  const { templates } = await httpStage(SMOKE, work);
  const dbPath = path.join(work, 'journal.sqlite');
  const env = { dbPath, configPath: path.join(work, 'no-config.yaml'), dataDir: work, receiptKeyPath: null, credentialsDirectory: null };
  const next = await generateJournal(dbPath, templates, entries);
  const full = await timed(() => takeBackup({ env, dir: path.join(work, 'full'), withKey: false }));
  await generateJournal(dbPath, templates, entries + incremented, next);
  const increment = await timed(() => takeIncrement({ env, dir: path.join(work, 'increment'), since: path.join(work, 'full'), withKey: false }));
  const copy = path.join(work, 'restoring.sqlite');
  fs.copyFileSync(path.join(work, 'full', 'interlock.sqlite'), copy);
  const laid = await timed(() => applyIncrements(copy, readChain(path.join(work, 'increment'))));

  const fullBytes = full.value.manifest.files.journal?.bytes ?? 0;
  const fullEntries = full.value.manifest.point.entries;
  const incrementBytes = increment.value.manifest.files.tail?.bytes ?? 0;
  const carried = increment.value.manifest.carried;
  const perEntry = (bytes: number, count: number) => (bytes / count).toFixed(1);
  console.log(`full backup: ${fullEntries} entries, ${fullBytes} bytes, ${perEntry(fullBytes, fullEntries)} bytes per entry, ${full.ms.toFixed(0)} ms`);
  console.log(`increment: ${carried} entries, ${incrementBytes} bytes, ${perEntry(incrementBytes, carried)} bytes per entry, ${increment.ms.toFixed(0)} ms`);
  console.log(`laid on the full backup's copy: ${laid.ms.toFixed(0)} ms (${((laid.ms / carried) * 1000).toFixed(0)} ms per 1,000 entries)`);
  const perCheckpoint = checkpointBytes();
  console.log(`a signed checkpoint in an increment: ${perCheckpoint.toFixed(1)} bytes`);
  retention(fullBytes / fullEntries, incrementBytes / carried, perCheckpoint);
} finally {
  fs.rmSync(work, { recursive: true, force: true });
}
process.exit(0);
