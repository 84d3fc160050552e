import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { SqliteJournal } from '../../db/journal-store.ts';
import { MemoryDerivedTables } from '../../db/memory/derived.ts';
import { openDatabase } from '../../db/open.ts';
import { REBUILD_VIEWS_EXIT_CODES, runRebuildViewsCli } from '../../server/views/rebuild-cli.ts';
import { Views } from '../../server/views/views.ts';
import { readFixture } from '../fixtures/journals/replay.ts';

// `npm run rebuild-views` resets the derived tables and rebuilds them from the journal: the
// digests it prints are those of the tables the views built incrementally, a batch per entry, on
// the same journal.

const FIXTURES = fileURLToPath(new URL('../fixtures/journals/', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'interlock-rebuild-views-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function run(args: string[], env: Record<string, string> = {}) {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = '';
  let err = '';
  stdout.on('data', (chunk) => (out += chunk));
  stderr.on('data', (chunk) => (err += chunk));
  const code = await runRebuildViewsCli(args, { DATA_DIR: dir, ...env }, { stdout, stderr });
  return { code, out, err };
}

/** The digests lines print: `view: N rows, digest <hex>`. */
const printedDigests = (out: string) => [...out.matchAll(/^ {2}(\S+): (\d+) rows, digest ([0-9a-f]{64})$/gm)].map(([, view, rows, sum]) => ({ view, sum, rows: Number(rows) }));

describe('npm run rebuild-views', () => {
  it.each(['day-1', 'day-5', 'restore-1'])('on the %s fixture journal prints the digests the incremental tables have', async (day) => {
    const entries = readFixture(join(FIXTURES, `${day}.jsonl`));
    const file = join(dir, `${day}.sqlite`);
    const opened = openDatabase(file);
    const journal = new SqliteJournal({ db: opened.db, wallClockMs: () => Date.now() });
    // The server's way: entries arrive one at a time, the views catch up after each.
    const tables = new MemoryDerivedTables();
    const views = new Views({ journal, inboxName: 'inbox', nowMs: () => 0, log: { fatal: () => {}, error: () => {} }, derived: tables });
    for (const entry of entries) {
      await journal.appendSealed([entry]);
      await views.current();
    }
    opened.close();
    const incremental = await tables.digests();
    expect(incremental.find((digest) => digest.view === 'ledger')?.rows).toBeGreaterThan(0);

    const { code, out, err } = await run(['--db', file]);
    expect(err).toBe('');
    expect(code).toBe(REBUILD_VIEWS_EXIT_CODES.ok);
    expect(out).toMatch(new RegExp(`rebuilt the views' derived tables from ${entries.length} journal entries in [0-9.]+ s \\([0-9]+ entries/s\\), under views version \\S+, cursor at seq ${entries.length}\\.`));
    expect(printedDigests(out)).toEqual(incremental);
  });

  it('answers its usage, a bad argument and a database that is not there as the other tools do', async () => {
    expect(await run(['--help'])).toMatchObject({ code: REBUILD_VIEWS_EXIT_CODES.ok, out: expect.stringContaining('usage:') });
    expect(await run(['--nope'])).toMatchObject({ code: REBUILD_VIEWS_EXIT_CODES.usage, err: expect.stringContaining('usage:') });
    const missing = join(dir, 'missing.sqlite');
    expect(await run(['--db', missing])).toMatchObject({ code: REBUILD_VIEWS_EXIT_CODES.refused, err: `refused: ${missing}: no such journal database\n` });
  });
});
