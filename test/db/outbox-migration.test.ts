import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { drizzle } from 'drizzle-orm/better-sqlite3';
import { migrate } from 'drizzle-orm/better-sqlite3/migrator';
import { afterEach, describe, expect, it } from 'vitest';
import { MemoryJournal, SqliteJournal } from '../../db/journal-store.ts';
import { rowOf } from '../../db/journal-rules.ts';
import { sealUnsealedJournal } from '../../db/journal-seals.ts';
import { guardProblems } from '../../db/journal-guards.ts';
import { migrateDatabase } from '../../db/open.ts';
import { EPOCH_CHAIN_ID } from '../../shared/entries.ts';
import * as schema from '../../db/schema.ts';
import { cleanUpDatabases, effectIdOf, fakeClock, fields, makeTempDir } from '../support/db-journals.ts';

afterEach(cleanUpDatabases);

const migrations = fileURLToPath(new URL('../../db/migrations/', import.meta.url));

/** A migrations folder holding only the first `count` migrations: a database as an older Interlock left it. */
function olderMigrations(count: number): string {
  const dir = path.join(makeTempDir(), 'migrations');
  fs.mkdirSync(path.join(dir, 'meta'), { recursive: true });
  const journal = JSON.parse(fs.readFileSync(path.join(migrations, 'meta/_journal.json'), 'utf8'));
  journal.entries = journal.entries.slice(0, count);
  for (const entry of journal.entries) fs.copyFileSync(path.join(migrations, `${entry.tag}.sql`), path.join(dir, `${entry.tag}.sql`));
  fs.writeFileSync(path.join(dir, 'meta/_journal.json'), JSON.stringify(journal));
  return dir;
}

describe('the outbox migration (0005) on a journal an older Interlock wrote', () => {
  it('keeps every entry and its seq, puts the guards back, and takes the new kinds', async () => {
    const file = path.join(makeTempDir(), 'old.sqlite');
    const sqlite = new Database(file);
    const db = drizzle({ client: sqlite, schema });
    migrate(db, { migrationsFolder: olderMigrations(5) });
    const clock = fakeClock();
    // Rows as an older Interlock stored them: the entries alone, with no global chain.
    const old = new MemoryJournal(clock);
    const eid = effectIdOf(1);
    await old.append('PROPOSED', eid, fields('PROPOSED'));
    await old.append('AUTHORIZED', eid, fields('AUTHORIZED'));
    const before = await old.scan(0, 100);
    const insertOld = sqlite.prepare('INSERT INTO entries (effect_id, kind, prev, hash, closes, ts_ms, body, reserves) VALUES (@effectId, @kind, @prev, @hash, @closes, @tsMs, @body, @reserves)');
    for (const { entry } of before) insertOld.run(rowOf(entry));
    expect(() => sqlite.prepare("INSERT INTO entries (effect_id, kind, prev, hash, closes, ts_ms, body) VALUES ('x', 'MESSAGE', null, 'h', 0, 1, '{}')").run()).toThrow(/CHECK/);

    migrateDatabase(db);
    await sealUnsealedJournal(sqlite, path.join(makeTempDir(), 'backup.sqlite'));
    const journal = new SqliteJournal({ db, ...clock });
    expect(await journal.scan(0, 100)).toEqual(before);
    const message = `m${'2'.repeat(23)}`;
    await journal.append('MESSAGE', message, fields('MESSAGE'));
    await journal.append('ATTEMPT', message, fields('ATTEMPT'));
    await journal.append('GAVE_UP', message, fields('GAVE_UP'));
    const after = await journal.scan(0, 100);
    expect(after.map((row) => row.seq)).toEqual([1, 2, 3, 4, 5]);
    // The guards of 0001 hold on the rebuilt table.
    expect(() => sqlite.prepare('UPDATE entries SET ts_ms = 0').run()).toThrow(/append-only/);
    expect(() => sqlite.prepare('DELETE FROM entries').run()).toThrow(/append-only/);
    expect(() =>
      sqlite.prepare("INSERT INTO entries (effect_id, kind, prev, hash, closes, ts_ms, body) VALUES (?, 'AUTHORIZED', ?, 'fork', 0, 1, '{}')").run(eid, before[0]!.entry.hash),
    ).toThrow(/UNIQUE/);
    expect(() => sqlite.prepare("INSERT INTO entries (effect_id, kind, prev, hash, closes, ts_ms, body) VALUES ('y', 'NOTICE', null, 'h9', 0, 1, '{}')").run()).toThrow(/CHECK/);
    sqlite.close();
  });
});

describe('the epoch migration (0010) on a journal with a global chain', () => {
  it('keeps every entry, seq and seal, puts the guards back as a new journal has them, and takes EPOCH', async () => {
    const file = path.join(makeTempDir(), 'sealed.sqlite');
    const sqlite = new Database(file);
    const db = drizzle({ client: sqlite, schema });
    migrate(db, { migrationsFolder: olderMigrations(10) });
    const clock = fakeClock();
    const journal = new SqliteJournal({ db, ...clock });
    const eid = effectIdOf(1);
    await journal.append('PROPOSED', eid, fields('PROPOSED'));
    await journal.append('AUTHORIZED', eid, fields('AUTHORIZED'));
    const before = await journal.scan(0, 100);
    const seals = sqlite.prepare('SELECT seq, global_hash FROM journal_seals ORDER BY seq').all();
    expect(() => sqlite.prepare("INSERT INTO entries (effect_id, kind, prev, hash, closes, ts_ms, body) VALUES (?, 'EPOCH', null, 'h', 0, 1, '{}')").run(EPOCH_CHAIN_ID)).toThrow(/CHECK/);

    migrateDatabase(db);
    expect(guardProblems(sqlite)).toEqual([]);
    expect(await journal.scan(0, 100)).toEqual(before);
    expect(sqlite.prepare('SELECT seq, global_hash FROM journal_seals ORDER BY seq').all()).toEqual(seals);
    await journal.append('EPOCH', EPOCH_CHAIN_ID, fields('EPOCH'));
    expect((await journal.scan(0, 100)).map((row) => row.seq)).toEqual([1, 2, 3]);
    expect(() => sqlite.prepare('UPDATE entries SET ts_ms = 0').run()).toThrow(/append-only/);
    expect(() => sqlite.prepare('DELETE FROM entries').run()).toThrow(/append-only/);
    expect(() =>
      sqlite.prepare("INSERT INTO entries (effect_id, kind, prev, hash, closes, ts_ms, body) VALUES (?, 'AUTHORIZED', ?, 'fork', 0, 1, '{}')").run(eid, before[0]!.entry.hash),
    ).toThrow(/UNIQUE/);
    sqlite.close();
  });
});
