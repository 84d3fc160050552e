import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PgJournal } from '../../db/pg/journal.ts';
import { openPgPool, type PgPool } from '../../db/pg/pool.ts';
import type { StoredChain } from '../../db/port/journal-file.ts';
import { openServerStorage } from '../../db/server-storage.ts';
import { openJournalFile } from '../../db/sqlite-journal-file.ts';
import { openStorage } from '../../db/sqlite-storage.ts';
import { EXPORT_FORMATS } from '../../server/export/export.ts';
import { runExportCli } from '../../server/export/export-cli.ts';
import { EXIT_CODES } from '../../server/export/limits.ts';
import { chainsInPeriodOf } from '../../server/export/port-chains.ts';
import type { Period } from '../../server/export/read-journal.ts';
import type { JournalStore } from '../../server/journal/store.ts';
import { loadOrCreateSigningKey } from '../../server/receipts/keys.ts';
import { runVerifyCli } from '../../server/receipts/verify-cli.ts';
import type { Entry } from '../../shared/entries.ts';
import { readFixture } from '../fixtures/journals/replay.ts';
import { dropPgDatabase, freshPgDatabase, type PgDatabase, postgresCluster, postgresOrSkip } from '../support/postgres.ts';
import { writeTestConfig } from '../support/server-process.ts';

// `npm run export` on PostgreSQL reads the journal through the storage port, a page of seqs at a
// time: the same entries stored in a SQLite file and in a PostgreSQL database export the same
// bytes, in every format, for a period that holds whole chains and for one that cuts them.

const available = postgresOrSkip('the receipts export on PostgreSQL (test/db/pg-export.test.ts)');

const FIXTURE = fileURLToPath(new URL('../fixtures/journals/day-1.jsonl', import.meta.url));

/** A stream that keeps what is written to it. */
function captured(): Writable & { text(): string } {
  let text = '';
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      text += chunk.toString();
      done();
    },
  });
  return Object.assign(stream, { text: () => text });
}

async function collect(chains: AsyncIterable<StoredChain>): Promise<StoredChain[]> {
  const all: StoredChain[] = [];
  for await (const chain of chains) all.push(chain);
  return all;
}

/** Cuts the last entry off every chain it reads: the port's chains would then not be the file's. */
class ShortChains extends PgJournal {
  override async sealedChain(effectId: string) {
    return (await super.sealedChain(effectId)).slice(0, -1);
  }
}

describe.skipIf(!available)('the receipts export on PostgreSQL', () => {
  let dir: string;
  let database: PgDatabase;
  let sqliteEnv: Record<string, string>;
  let pgEnv: Record<string, string>;
  let entries: Entry[];
  let periods: Period[];
  let pool: PgPool;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'interlock-pg-export-'));
    const dataDir = join(dir, 'data');
    mkdirSync(dataDir);
    mkdirSync(join(dir, 'sqlite'));
    loadOrCreateSigningKey(dataDir);
    entries = readFixture(FIXTURE);
    const config = writeTestConfig(dir);
    const file = join(dir, 'sqlite', 'interlock.sqlite');
    database = await freshPgDatabase('export');
    sqliteEnv = { DATA_DIR: dataDir, DB_PATH: file, INTERLOCK_CONFIG: config };
    pgEnv = { DATA_DIR: dataDir, DATABASE_URL: database.appUrl, INTERLOCK_CONFIG: config };
    const sqlite = await openStorage({ file });
    const pg = await openServerStorage({ kind: 'postgresql', url: database.appUrl, migrateUrl: database.appUrl });
    try {
      await sqlite.journal({ wallClockMs: Date.now }).appendSealed(entries);
      await pg.journal({ wallClockMs: Date.now }).appendSealed(entries);
    } finally {
      await sqlite.close();
      await pg.close();
    }
    const times = entries.map((entry) => entry.ts_ms).sort((a, b) => a - b);
    const at = (fraction: number) => times[Math.floor(fraction * (times.length - 1))]!;
    // The whole day; a middle that starts and ends inside chains; a sliver near the end.
    periods = [
      { fromMs: times[0]!, toMs: times.at(-1)! + 1 },
      { fromMs: at(0.3), toMs: at(0.6) },
      { fromMs: at(0.8), toMs: at(0.9) + 1 },
    ];
    pool = openPgPool({ url: database.appUrl, max: 2 });
  }, 60_000);

  afterAll(async () => {
    await pool?.end();
    if (database !== undefined) await dropPgDatabase(database);
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  /** The port's chains of each period, read in small pages, must be the file's. */
  const sameChains = async (journal: JournalStore) => {
    const file = await openJournalFile(sqliteEnv.DB_PATH!);
    try {
      for (const period of periods) {
        const fromFile = await collect(file.chainsInPeriod(period, 100_000));
        expect(fromFile.length).toBeGreaterThan(0);
        expect(await collect(chainsInPeriodOf(journal, period, 100_000, 7))).toEqual(fromFile);
      }
    } finally {
      await file.close();
    }
  };

  it('the chains of a period read through the port, seven entries a page, are the file’s; a store that cuts chains short is told apart', async () => {
    await sameChains(new PgJournal({ pool, wallClockMs: Date.now }));
    await expect(sameChains(new ShortChains({ pool, wallClockMs: Date.now }))).rejects.toThrow();
  });

  it('exports the same bytes as the SQLite file of the same entries, in every format and period', async () => {
    for (const format of EXPORT_FORMATS) {
      for (const period of periods) {
        const args = ['--format', format, '--from', String(period.fromMs), '--to', String(period.toMs)];
        const outputs: string[] = [];
        for (const env of [sqliteEnv, pgEnv]) {
          const out = captured();
          const err = captured();
          expect(await runExportCli(args, env, { stdout: out, stderr: err }), err.text()).toBe(EXIT_CODES.ok);
          expect(err.text()).toMatch(/^export: [1-9]\d* receipts and \d+ decisions/);
          outputs.push(out.text());
        }
        expect(outputs[0]!.length, `${format} ${period.fromMs}`).toBeGreaterThan(0);
        expect(outputs[1], `${format} ${period.fromMs}–${period.toMs}`).toBe(outputs[0]);
      }
    }
  });

  // Last: it damages the database.
  it('npm run verify -- --database checks the database as --journal checks the file, and finds a row edited by its owner', async () => {
    const file = JSON.parse((await runVerifyCli(['--journal', sqliteEnv.DB_PATH!], sqliteEnv)).stdout);
    const checked = await runVerifyCli(['--database'], pgEnv);
    expect(checked.exitCode, checked.stderr).toBe(0);
    const report = JSON.parse(checked.stdout);
    expect(report.file).toMatch(/^postgresql:\/\/interlock_app@127\.0\.0\.1:\d+\/export_\w+$/);
    expect({ ...report, file: '' }).toEqual({ ...file, file: '' });
    expect(report).toMatchObject({ valid: true, size: entries.length });

    const unset = await runVerifyCli(['--database'], {});
    expect({ exitCode: unset.exitCode, stderr: unset.stderr.split('\n')[0] }).toEqual({
      exitCode: 2,
      stderr: 'verify: --database checks the PostgreSQL database DATABASE_URL names, and it is not set; a SQLite journal is checked with --journal <file>',
    });
    const unreachable = await runVerifyCli(['--database'], { DATABASE_URL: 'postgresql://interlock_app:secret@127.0.0.1:1/nowhere' });
    expect(unreachable.exitCode).toBe(2);
    expect(unreachable.stderr).not.toContain('secret');

    await (await postgresCluster()).psql(
      database.name,
      "ALTER TABLE entries DISABLE TRIGGER entries_no_update; UPDATE entries SET body = regexp_replace(body, '\"amount\":(\\d)', '\"amount\":9\\1') WHERE seq = (SELECT min(seq) FROM entries WHERE body LIKE '%\"amount\":%'); ALTER TABLE entries ENABLE TRIGGER entries_no_update;",
    );
    const damaged = await runVerifyCli(['--database'], pgEnv);
    expect(damaged.exitCode).toBe(1);
    expect(JSON.parse(damaged.stdout)).toMatchObject({ valid: false, problem: { code: expect.any(String) } });
  });
});
