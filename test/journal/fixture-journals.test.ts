import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appendSealedMax } from '../../db/journal-base.ts';
import { MemoryJournal, SqliteJournal } from '../../db/journal-store.ts';
import { type OpenDatabase, openDatabase } from '../../db/open.ts';
import type { Entry } from '../../shared/entries.ts';
import { AppClock } from '../../server/clock.ts';
import type { JournalStore } from '../../server/journal/store.ts';
import { type Sandbox, startSandbox } from '../../server/sandbox/index.ts';
import { createServices, startServices } from '../../server/services.ts';
import { fixtureText, journalViews, readFixture, scanAll, type ViewsFile, wireViews } from '../fixtures/journals/replay.ts';
import { testConfig } from '../support/app-world.ts';

// Fixture journals (DESIGN "What wave 2 adds"): each test/fixtures/journals/day-N.jsonl was written
// once by the code of its day (see its write-day-N.ts) and is never regenerated. Every later code
// must still load it, check every hash and link, and rebuild from it the very views it was written
// with (day-N.views.json). A change that breaks this breaks every journal already on disk.

const FIXTURES = fileURLToPath(new URL('../fixtures/journals/', import.meta.url));
const DAYS = readdirSync(FIXTURES)
  .filter((name) => /^day-\d+\.jsonl$/.test(name))
  .map((name) => name.replace(/\.jsonl$/, ''))
  .sort();

/** Store sealed entries the way an import does, at most `appendSealedMax` per call. */
async function load(journal: JournalStore & { appendSealed(sealed: readonly Entry[]): Promise<void> }, entries: readonly Entry[]): Promise<void> {
  for (let at = 0; at < entries.length; at += appendSealedMax) await journal.appendSealed(entries.slice(at, at + appendSealedMax));
}

it('there is at least one fixture journal, each with its views', () => {
  expect(DAYS).toContain('day-1');
  for (const day of DAYS) expect(readdirSync(FIXTURES)).toContain(`${day}.views.json`);
});

describe.each(DAYS)('%s', (day) => {
  const text = readFileSync(join(FIXTURES, `${day}.jsonl`), 'utf8');
  const entries = readFixture(join(FIXTURES, `${day}.jsonl`));
  const file = JSON.parse(readFileSync(join(FIXTURES, `${day}.views.json`), 'utf8')) as ViewsFile;
  const expected = file.views;
  const written = `${day} (written by ${file.written_by})`;
  // The journals' own clock: a little after the day's last entry; nothing here should write.
  const lastMs = Math.max(...entries.map((e) => e.ts_ms));
  const clock = new AppClock(() => lastMs + 60_000);

  let dir: string;
  let database: OpenDatabase;
  let sqlite: SqliteJournal;
  let memory: MemoryJournal;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), `interlock-fixture-${day}-`));
    database = openDatabase(join(dir, 'interlock.sqlite'));
    sqlite = new SqliteJournal({ db: database.db, wallClockMs: () => clock.wallMs() });
    memory = new MemoryJournal({ wallClockMs: () => clock.wallMs() });
    await load(sqlite, entries);
    await load(memory, entries);
  });
  afterAll(() => {
    database.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it(`${written}: loads through appendSealed into SQLite and memory, every hash and link checked, and reads back byte for byte`, async () => {
    expect(entries).toHaveLength(expected.entries);
    expect(fixtureText(await scanAll(sqlite))).toBe(text);
    expect(fixtureText(await scanAll(memory))).toBe(text);
  });

  it(`${written}: rebuilds to the views it was written with, folded as at start-up (SQLite) and applied as live (memory)`, async () => {
    const folded = wireViews(sqlite, expected.inbox_name, 'fold');
    await folded.follower.catchUp();
    expect(await journalViews(folded, await scanAll(sqlite), sqlite, expected.groups)).toEqual(expected);
    const applied = wireViews(memory, expected.inbox_name, 'apply');
    await applied.follower.catchUp();
    expect(await journalViews(applied, await scanAll(memory), memory, expected.groups)).toEqual(expected);
  });

  it(`${written}: every chain's receipt verifies, signed with the fixture key`, () => {
    expect(expected.chains.length).toBeGreaterThan(0);
    expect(expected.chains.filter((chain) => !chain.receipt.valid || chain.receipt.problems.length > 0)).toEqual([]);
  });

  describe('start-up over it', () => {
    let sandbox: Sandbox;
    beforeAll(async () => {
      sandbox = await startSandbox({ clockMs: () => clock.wallMs() });
    });
    afterAll(async () => {
      await sandbox.close();
    });

    it(`${written}: start-up recovery writes nothing, since the day left nothing in flight, and the server's own replay shows the same views`, async () => {
      expect(expected.in_flight).toEqual([]);
      const errors: unknown[] = [];
      const services = createServices({
        config: { ...testConfig(), inboxName: expected.inbox_name },
        clock,
        database,
        dataDir: join(dir, 'data'),
        stripe: sandbox.stripe(),
        sandbox: true,
        onError: (effectId, error) => errors.push([effectId, error]),
      });
      await startServices(services);
      expect(errors).toEqual([]);
      expect(fixtureText(await scanAll(services.journal))).toBe(text);
      const { inbox, scoreboard } = await services.views.current();
      const replayed = { projection: inbox, scoreboard };
      expect(await journalViews(replayed, entries, services.journal, expected.groups)).toEqual(expected);
      expect(await services.inbox.refresh()).toEqual(new Map());
      expect(await services.inbox.executeApproved()).toEqual(new Map());
      expect(fixtureText(await scanAll(services.journal))).toBe(text);
    });
  });
});
