import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { rowOf } from '../../db/journal-rules.ts';
import { SealRefusedError, needsSealing, sealUnsealedJournal } from '../../db/journal-seals.ts';
import { SqliteJournal } from '../../db/journal-store.ts';
import { AppClock } from '../../server/app/clock.ts';
import { globalHashOf } from '../../server/journal/hash.ts';
import type { Entry } from '../../shared/entries.ts';
import { fixtureText, journalViews, readFixture, scanAll, type ViewsFile, wireViews } from '../fixtures/journals/replay.ts';
import { cleanUpDatabases, makeTempDir, openTempDatabase } from '../support/db-journals.ts';

afterEach(cleanUpDatabases);

// A journal an Interlock before the global chain wrote has entries and no seals. Start-up seals
// it once (server/integrity/start-check.ts): verified whole, backed up, then sealed.

const FIXTURES = fileURLToPath(new URL('../fixtures/journals/', import.meta.url));
const DAYS = fs.readdirSync(FIXTURES).filter((name) => /^day-\d+\.jsonl$/.test(name)).map((name) => name.replace(/\.jsonl$/, '')).sort();

/** A database holding `entries` as an older Interlock stored them: rows only, no global chain. */
function olderJournal(entries: readonly Entry[]) {
  const opened = openTempDatabase();
  const insert = opened.sqlite.prepare('INSERT INTO entries (effect_id, kind, prev, hash, closes, ts_ms, body, reserves) VALUES (@effectId, @kind, @prev, @hash, @closes, @tsMs, @body, @reserves)');
  opened.sqlite.transaction(() => {
    for (const entry of entries) insert.run(rowOf(entry));
  })();
  return opened;
}

describe.each(DAYS)('sealing the fixture journal %s', (day) => {
  const entries = readFixture(path.join(FIXTURES, `${day}.jsonl`));
  const expected = (JSON.parse(fs.readFileSync(path.join(FIXTURES, `${day}.views.json`), 'utf8')) as ViewsFile).views;

  it('seals every entry after a backup, and replays to the views it was written with', async () => {
    const opened = olderJournal(entries);
    expect(needsSealing(opened.sqlite)).toBe(true);
    const backupFile = path.join(makeTempDir(), 'before-seal.sqlite');
    expect(await sealUnsealedJournal(opened.sqlite, backupFile)).toEqual({ sealed: entries.length, backupFile });
    expect(needsSealing(opened.sqlite)).toBe(false);
    // The backup is the journal as it was: every entry, no seal.
    const backup = openTempDatabase(backupFile);
    expect((backup.sqlite.prepare('SELECT count(*) AS n FROM entries').get() as { n: number }).n).toBe(entries.length);
    expect((backup.sqlite.prepare('SELECT count(*) AS n FROM journal_seals').get() as { n: number }).n).toBe(0);
    // The seals are the global chain the entries give, in seq order.
    let previous: string | null = null;
    const seals = opened.sqlite.prepare('SELECT seq, global_hash AS g FROM journal_seals ORDER BY seq').all() as Array<{ seq: number; g: string }>;
    seals.forEach(({ seq, g }, i) => {
      previous = globalHashOf(previous, seq, entries[i]!.hash);
      expect(g).toBe(previous);
    });
    const clock = new AppClock(() => Math.max(...entries.map((e) => e.ts_ms)) + 60_000);
    const journal = new SqliteJournal({ db: opened.db, wallClockMs: () => clock.wallMs() });
    const replayed = wireViews(journal, expected.inbox_name, 'fold');
    await replayed.follower.catchUp();
    expect(replayed.follower.head).toMatchObject({ size: entries.length, globalHash: previous });
    expect(await journalViews(replayed, await scanAll(journal), journal, expected.groups)).toEqual(expected);
    // Sealing again does nothing.
    expect(await sealUnsealedJournal(opened.sqlite, backupFile)).toEqual({ sealed: 0, backupFile: null });
    expect(fixtureText(await scanAll(journal))).toBe(fs.readFileSync(path.join(FIXTURES, `${day}.jsonl`), 'utf8'));
  });
});

describe('a journal that is not sealed', () => {
  const entries = readFixture(path.join(FIXTURES, 'day-1.jsonl'));

  it('when it already fails verification: refused, nothing written, no backup', async () => {
    const opened = olderJournal(entries);
    opened.sqlite.exec('DROP TRIGGER entries_no_update');
    opened.sqlite.prepare("UPDATE entries SET body = replace(body, '\"kind\"', '\"x\":1,\"kind\"') WHERE seq = 3").run();
    const backupFile = path.join(makeTempDir(), 'before-seal.sqlite');
    const refused = await sealUnsealedJournal(opened.sqlite, backupFile).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(SealRefusedError);
    expect((refused as SealRefusedError).message).toMatch(/not sealed because it fails verification: journal entry seq 3/);
    expect((refused as SealRefusedError).corrupt?.seq).toBe(3);
    expect(fs.existsSync(backupFile)).toBe(false);
    expect((opened.sqlite.prepare('SELECT count(*) AS n FROM journal_seals').get() as { n: number }).n).toBe(0);
  });

  it('when it holds checkpoints: its seals were removed, and it is refused rather than sealed again', async () => {
    const opened = olderJournal(entries);
    opened.sqlite.prepare("INSERT INTO journal_checkpoints (epoch, size, head, note, signed_at_ms) VALUES (0, 3, 'h', 'n', 1)").run();
    const refused = await sealUnsealedJournal(opened.sqlite, path.join(makeTempDir(), 'b.sqlite')).catch((error: unknown) => error);
    expect((refused as SealRefusedError).message).toMatch(/has 1 checkpoints but no global seals: the seals were removed/);
  });
});
