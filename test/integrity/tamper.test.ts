import fs from 'node:fs';
import type Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { JournalDamagedError } from '../../server/integrity/damage.ts';
import { runVerifyCli } from '../../server/receipts/verify-cli.ts';
import { parseEnv } from '../../server/config/env.ts';
import { startInterlock } from '../../server/app/runtime.ts';
import { rowOf, sealNext } from '../../db/journal-rules.ts';
import { cleanUpDatabases, effectIdOf, fakeClock, fields } from '../support/db-journals.ts';
import { runServerToExit, compiledToolCommand, literally } from '../support/server-process.ts';
import { checkAtStart, copyJournal, tamper, writeJournal } from '../support/tamper.ts';
import { SqliteJournal } from '../../db/journal-store.ts';
import { openDatabase } from '../../db/open.ts';
import { storageOver } from '../../db/sqlite-storage.ts';
import { checkJournalAtStart } from '../../server/integrity/start-check.ts';
import type { JournalStore } from '../../server/journal/store.ts';
import { Views } from '../../server/views/views.ts';

afterEach(cleanUpDatabases);

// What an attacker who can write the data folder (but not read the receipt key) does to the
// journal, and what start-up says of each. Every refusal is one line that names the entry, says
// what is wrong and what to do.

const victim = effectIdOf(2);
const row = (sqlite: Database.Database, where: string, ...args: unknown[]) =>
  sqlite.prepare(`SELECT seq, effect_id AS effectId, body FROM entries WHERE ${where}`).get(...args) as { seq: number; effectId: string; body: string };

/**
 * Each tampering, what start-up says of it, and what the offline verifier says when it words it
 * otherwise: it reads every entry's seal before any chain's links (as the background pass does),
 * where start-up's replay meets a broken link first.
 */
const cases: Array<{ name: string; edit: (sqlite: Database.Database) => void; hide?: boolean; says: RegExp; verifierSays?: RegExp; seq?: number }> = [
  {
    name: 'an entry’s body edited',
    edit: (s) => s.prepare('UPDATE entries SET body = replace(body, \'"kind":"AUTHORIZED"\', \'"kind":"AUTHORIZED","x":1\') WHERE seq = 6').run(),
    says: /seq 6 .*does not match its hash/,
    seq: 6,
  },
  {
    name: 'one entry deleted from the middle of a chain',
    edit: (s) => s.prepare('DELETE FROM entries WHERE seq = 6').run(),
    says: /seq 6 has a global seal but no entry/,
    seq: 6,
  },
  {
    name: 'a whole chain deleted, its seals too',
    edit: (s) => {
      s.prepare('DELETE FROM journal_seals WHERE seq IN (SELECT seq FROM entries WHERE effect_id = ?)').run(victim);
      s.prepare('DELETE FROM entries WHERE effect_id = ?').run(victim);
    },
    says: /seq 3 .*breaks the global chain/,
    seq: 3,
  },
  {
    name: 'an entry inserted without the journal',
    edit: (s) => {
      // A well-formed entry whose hash holds, of a chain of its own: only the global chain tells.
      const forged = rowOf(sealNext('PROPOSED', effectIdOf(9), fields('PROPOSED') as never, undefined, 1_700_000_000_000));
      s.prepare('INSERT INTO entries (effect_id, kind, prev, hash, closes, ts_ms, body, reserves) VALUES (@effectId, @kind, @prev, @hash, @closes, @tsMs, @body, @reserves)').run(forged);
    },
    says: /seq 13 has no global seal: it was not written by the journal/,
    seq: 13,
  },
  {
    name: 'a chain stored below seq 1, where reading the journal in order never looks',
    edit: (s) => {
      // Well-formed and hash-valid, with no seal: a replay that starts after seq 0 never reads it,
      // but a read of its effect's chain would find a request already made.
      const forged = rowOf(sealNext('PROPOSED', effectIdOf(9), fields('PROPOSED') as never, undefined, 1_700_000_000_000));
      s.prepare('INSERT INTO entries (seq, effect_id, kind, prev, hash, closes, ts_ms, body, reserves) VALUES (-1, @effectId, @kind, @prev, @hash, @closes, @tsMs, @body, @reserves)').run(forged);
    },
    says: /seq -1 .*outside the journal's order/,
    seq: -1,
  },
  {
    name: 'two entries swapped within a chain',
    edit: (s) => {
      const a = row(s, 'seq = 2');
      const b = row(s, 'seq = 6');
      s.prepare('UPDATE entries SET seq = -1 WHERE seq = 2').run();
      s.prepare('UPDATE entries SET seq = 2 WHERE seq = 6').run();
      s.prepare('UPDATE entries SET seq = 6 WHERE seq = -1').run();
      expect(a.effectId).toBe(b.effectId);
    },
    says: /seq 2 .*does not link/,
    verifierSays: /seq 2 .*breaks the global chain/,
    seq: 2,
  },
  {
    name: 'two chains’ rows swapped, seals and all',
    edit: (s) => {
      for (const table of ['entries', 'journal_seals']) {
        s.prepare(`UPDATE ${table} SET seq = -1 WHERE seq = 1`).run();
        s.prepare(`UPDATE ${table} SET seq = 1 WHERE seq = 2`).run();
        s.prepare(`UPDATE ${table} SET seq = 2 WHERE seq = -1`).run();
      }
    },
    says: /seq 1 .*breaks the global chain/,
    seq: 1,
  },
  {
    name: 'the last entries deleted, their seals left',
    edit: (s) => s.prepare('DELETE FROM entries WHERE seq > 10').run(),
    says: /global chain goes on to seq 12 but the entries end at seq 10: entries were removed from the end/,
    seq: 12,
  },
  {
    name: 'the append-only triggers dropped',
    edit: () => {},
    hide: false,
    says: /trigger entries_no_delete on entries is missing.*trigger entries_no_update on entries is missing/,
  },
  {
    name: 'a trigger replaced by one that lets every change through',
    edit: (s) => s.exec("CREATE TRIGGER `entries_no_delete` BEFORE DELETE ON `entries` BEGIN SELECT 1; END"),
    hide: false,
    says: /trigger entries_no_delete on entries is changed/,
  },
];

describe('start-up refuses a journal changed behind its back', () => {
  it('an untouched journal passes, with its size and global head', async () => {
    const outcome = await checkAtStart(await writeJournal());
    expect(outcome).not.toBeInstanceOf(JournalDamagedError);
    expect(outcome).toMatchObject({ size: 12, head: expect.stringMatching(/^[0-9a-f]{64}$/) });
    const verified = await runVerifyCli(['--journal', await writeJournal()]);
    expect(verified.exitCode).toBe(0);
    expect(JSON.parse(verified.stdout)).toMatchObject({ valid: true, size: 12, problem: null });
  });

  for (const c of cases) {
    it(`${c.name}: one line naming what is wrong and what to do`, async () => {
      const file = copyJournal(await writeJournal());
      tamper(file, c.edit, c.hide === false ? { hide: false } : {});
      const refused = await checkAtStart(file);
      expect(refused).toBeInstanceOf(JournalDamagedError);
      const error = refused as JournalDamagedError;
      expect(error.message).toMatch(c.says);
      expect(error.message).toContain(`restore the database from a backup, or locate the damage with \`npm run verify -- --journal ${file}\``);
      expect(error.message).not.toContain('\n');
      if (c.seq !== undefined) expect(error.site?.seq).toBe(c.seq);
      // The offline check finds the same, read-only.
      const verified = await runVerifyCli(['--journal', file]);
      expect(verified.exitCode).toBe(1);
      const report = JSON.parse(verified.stdout) as { valid: boolean; problem: { code: string; message: string; seq: number | null } };
      expect(report.valid).toBe(false);
      expect(report.problem.code).toBe(error.code);
      expect(report.problem.message).toMatch(c.verifierSays ?? c.says);
      if (c.seq !== undefined) expect(report.problem.seq).toBe(c.seq);
    });
  }

  it.each([
    ['overwritten with bytes that are not SQLite at all', (file: string) => fs.writeFileSync(file, Buffer.alloc(8_192, 0x5a))],
    [
      'with its pages’ headers broken',
      (file: string) => {
        const fd = fs.openSync(file, 'r+');
        for (let at = 4_096; at < fs.statSync(file).size; at += 4_096) fs.writeSync(fd, Buffer.alloc(8, 0xff), 0, 8, at);
        fs.closeSync(fd);
      },
    ],
  ])('a database file %s is journal damage, told in the one line (npm start prints it and exits 2)', async (_how, damage) => {
    const file = copyJournal(await writeJournal(40));
    damage(file);
    const started = startInterlock(parseEnv({ DB_PATH: file, DATA_DIR: `${file}.data`, PORT: '0', SANDBOX_PORT: '0', SANDBOX_DEMO: '0', LOG_LEVEL: 'silent' }));
    await expect(started).rejects.toThrow(JournalDamagedError);
    await expect(started).rejects.toThrow(/^journal damaged: the database file cannot be read by SQLite \(SQLITE_[A-Z_]+: [^\n]*\): its bytes were overwritten or damaged; restore the database from a backup/);
  });

  it('the server process prints the one line and exits 2, with no stack trace, and serves nothing', async () => {
    const file = copyJournal(await writeJournal());
    tamper(file, (s) => {
      s.prepare('DELETE FROM journal_seals WHERE seq IN (SELECT seq FROM entries WHERE effect_id = ?)').run(victim);
      s.prepare('DELETE FROM entries WHERE effect_id = ?').run(victim);
    });
    const { exit, stderr } = await runServerToExit({ DB_PATH: file, DATA_DIR: `${file}.data`, PORT: '0', SANDBOX_PORT: '0' });
    expect(exit).toBe('2');
    expect(stderr.trim().split('\n')).toEqual([expect.stringMatching(new RegExp(`^Interlock did not start: journal damaged at seq 3 \\(effect [0-9a-f]{12}\\): .*breaks the global chain.*${literally(compiledToolCommand('verify', '--journal'))}`))]);
    expect(stderr).not.toMatch(/\n\s+at /);
  });
});

describe('another process on the same journal during the start-up check', () => {
  it('an entry another process appends between the replay and the read of the chain is not taken for entries removed from the end', async () => {
    const file = copyJournal(await writeJournal());
    const opened = openDatabase(file);
    const other = openDatabase(file);
    try {
      const journal = new SqliteJournal({ db: opened.db, ...fakeClock() });
      const elsewhere = new SqliteJournal({ db: other.db, ...fakeClock() });
      const views = new Views({ journal, inboxName: 'inbox', nowMs: () => 0, log: { fatal: () => {}, error: () => {} } });
      // The other process writes just after this one's replay read the last entry, as a server
      // starting beside it writes its CONFIG entry.
      const racing: JournalStore = Object.create(views.journal);
      racing.newestSeq = async () => {
        await elsewhere.append('PROPOSED', effectIdOf(99), fields('PROPOSED'));
        return views.journal.newestSeq();
      };
      const outcome = await checkJournalAtStart({ storage: storageOver(opened), journal: racing, views, log: { info: () => {} } });
      expect(outcome.size).toBe(13);
    } finally {
      other.close();
      opened.close();
    }
  });
});
