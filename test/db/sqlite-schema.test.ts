import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { drizzle } from 'drizzle-orm/better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { SqliteJournal } from '../../db/journal-store.ts';
import { migrateDatabase } from '../../db/open.ts';
import * as schema from '../../db/schema.ts';
import { cleanUpDatabases, effectIdOf, fakeClock, fields, makeTempDir, openTempDatabase, tempDbFile } from '../support/db-journals.ts';

afterEach(cleanUpDatabases);

const eid = effectIdOf(1);
const otherEid = effectIdOf(2);

interface RawRow {
  effectId: string;
  kind: string;
  prev: string | null;
  hash: string;
  closes?: number;
}

// Rows written straight with SQL, as a buggy caller could: the schema alone must refuse them.
function insertRaw(sqlite: Database.Database, row: RawRow): void {
  sqlite
    .prepare(
      `INSERT INTO entries (effect_id, kind, prev, hash, closes, ts_ms, body)
       VALUES (@effectId, @kind, @prev, @hash, @closes, 1, '{}')`,
    )
    .run({ closes: 0, ...row });
}

describe('schema', () => {
  it('refuses a forked chain: two entries following the same entry of one effect', () => {
    const { sqlite } = openTempDatabase();
    insertRaw(sqlite, { effectId: eid, kind: 'PROPOSED', prev: null, hash: 'h1' });
    insertRaw(sqlite, { effectId: eid, kind: 'AUTHORIZED', prev: 'h1', hash: 'h2' });
    expect(() => insertRaw(sqlite, { effectId: eid, kind: 'DISPATCHED', prev: 'h1', hash: 'h3' })).toThrow(
      /UNIQUE constraint failed/,
    );
  });

  it('refuses a forked chain: two first entries of one effect', () => {
    const { sqlite } = openTempDatabase();
    insertRaw(sqlite, { effectId: eid, kind: 'PROPOSED', prev: null, hash: 'h1' });
    expect(() => insertRaw(sqlite, { effectId: eid, kind: 'PROPOSED', prev: null, hash: 'h2' })).toThrow(
      /UNIQUE constraint failed/,
    );
  });

  it('allows each effect its own first entry, since chains are per effect', () => {
    const { sqlite } = openTempDatabase();
    insertRaw(sqlite, { effectId: eid, kind: 'PROPOSED', prev: null, hash: 'h1' });
    insertRaw(sqlite, { effectId: otherEid, kind: 'PROPOSED', prev: null, hash: 'h2' });
    expect(sqlite.prepare('SELECT count(*) AS n FROM entries').get()).toEqual({ n: 2 });
  });

  it('refuses a second COMMITTED for one effect, and allows one COMMITTED per effect', () => {
    const { sqlite } = openTempDatabase();
    insertRaw(sqlite, { effectId: eid, kind: 'COMMITTED', prev: null, hash: 'h1', closes: 1 });
    insertRaw(sqlite, { effectId: otherEid, kind: 'COMMITTED', prev: null, hash: 'h2', closes: 1 });
    expect(() => insertRaw(sqlite, { effectId: eid, kind: 'COMMITTED', prev: 'h1', hash: 'h3', closes: 1 })).toThrow(
      /UNIQUE constraint failed/,
    );
  });

  it('refuses a repeated hash, an unknown kind, and a closes flag other than 0 or 1', () => {
    const { sqlite } = openTempDatabase();
    insertRaw(sqlite, { effectId: eid, kind: 'PROPOSED', prev: null, hash: 'h1' });
    expect(() => insertRaw(sqlite, { effectId: otherEid, kind: 'PROPOSED', prev: null, hash: 'h1' })).toThrow(
      /UNIQUE constraint failed/,
    );
    expect(() => insertRaw(sqlite, { effectId: otherEid, kind: 'SENT', prev: null, hash: 'h2' })).toThrow(
      /CHECK constraint failed/,
    );
    expect(() => insertRaw(sqlite, { effectId: otherEid, kind: 'PROPOSED', prev: null, hash: 'h3', closes: 2 })).toThrow(
      /CHECK constraint failed/,
    );
  });

  it('refuses UPDATE and DELETE on entries: the journal is append-only', async () => {
    const { db, sqlite } = openTempDatabase();
    const journal = new SqliteJournal({ db, ...fakeClock() });
    await journal.append('PROPOSED', eid, fields('PROPOSED', { effect: { amount: 5 } }));
    expect(() => sqlite.prepare(`UPDATE entries SET body = '{}'`).run()).toThrow('entries is append-only');
    expect(() => sqlite.prepare('DELETE FROM entries').run()).toThrow('entries is append-only');
    expect(await journal.entries(eid)).toHaveLength(1);
  });
});

describe('openDatabase', () => {
  it('sets WAL, synchronous=FULL, foreign keys and a busy timeout on a file', () => {
    const { sqlite } = openTempDatabase();
    expect(sqlite.pragma('journal_mode', { simple: true })).toBe('wal');
    expect(sqlite.pragma('synchronous', { simple: true })).toBe(2);
    expect(sqlite.pragma('foreign_keys', { simple: true })).toBe(1);
    expect(sqlite.pragma('busy_timeout', { simple: true })).toBe(5000);
  });

  it('creates the missing parent folder of the file', () => {
    const file = path.join(makeTempDir(), 'a', 'b', 'journal.sqlite');
    openTempDatabase(file);
    expect(fs.existsSync(file)).toBe(true);
  });

  it('reopening a file keeps its entries and applies no migration twice', async () => {
    const first = openTempDatabase();
    const appended = await new SqliteJournal({ db: first.db, ...fakeClock() }).append('PROPOSED', eid, fields('PROPOSED'));
    first.close();
    const second = openTempDatabase(first.file);
    expect(await new SqliteJournal({ db: second.db, ...fakeClock() }).entries(eid)).toEqual([appended]);
    const migrations = fs.readdirSync(new URL('../../db/migrations', import.meta.url)).filter((f) => f.endsWith('.sql'));
    expect(second.sqlite.prepare('SELECT count(*) AS n FROM __drizzle_migrations').get()).toEqual({
      n: migrations.length,
    });
  });
});

describe('migrateDatabase', () => {
  it('a connection that loses the race to migrate a fresh file retries and finds nothing left to do', () => {
    const file = tempDbFile();
    const loser = new Database(file);
    // Another connection migrates the file after the loser has read "nothing applied" and just
    // before its BEGIN: the loser's first CREATE TABLE then fails, and only a fresh read helps.
    const prepare = loser.prepare.bind(loser);
    let raced = false;
    loser.prepare = ((source: string) => {
      if (!raced && source.startsWith('BEGIN')) {
        raced = true;
        openTempDatabase(file).close();
      }
      return prepare(source);
    }) as typeof loser.prepare;
    try {
      migrateDatabase(drizzle({ client: loser, schema }));
      expect(raced).toBe(true);
      expect(loser.prepare('SELECT count(*) AS n FROM __drizzle_migrations').pluck().get()).toBe(fs.readdirSync(new URL('../../db/migrations', import.meta.url)).filter((f) => f.endsWith('.sql')).length);
    } finally {
      loser.close();
    }
  });
});
