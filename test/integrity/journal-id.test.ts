import type Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { JournalDamagedError } from '../../server/integrity/damage.ts';
import { runVerifyCli } from '../../server/receipts/verify-cli.ts';
import { startChecked, startRefusal } from '../support/checkpoints.ts';
import { cleanUpDatabases } from '../support/db-journals.ts';
import { runServerToExit, compiledToolCommand, literally } from '../support/server-process.ts';
import { tamper, writeJournal } from '../support/tamper.ts';

afterEach(cleanUpDatabases);

// The journal's id names it in every checkpoint's origin. It sits in journal_meta, a table no
// trigger guards, so someone who can write the data folder can drop it or change it: start-up
// must then refuse in its one line, never stop on a stack trace or sign under a name that is not one.

const cases: Array<{ name: string; edit: (sqlite: Database.Database) => void }> = [
  { name: 'the table of the journal’s id dropped', edit: (s) => s.exec('DROP TABLE journal_meta') },
  {
    name: 'the id changed to text that is not an id, its checkpoints removed',
    edit: (s) => {
      s.prepare("UPDATE journal_meta SET value = 'not an id' WHERE name = 'journal_id'").run();
      s.prepare('DELETE FROM journal_checkpoints').run();
    },
  },
];

describe('a journal id that was removed or changed is damage, told in one line', () => {
  for (const c of cases) {
    it(`${c.name}: start-up refuses it as journal damage, and so does the offline check`, async () => {
      const file = await writeJournal(2);
      (await startChecked(file)).close();
      tamper(file, c.edit);
      const refused = await startRefusal(file);
      expect(refused).toBeInstanceOf(JournalDamagedError);
      expect(refused?.code).toBe('journal_corrupt');
      expect(refused?.message).toMatch(/journal id/);
      const verified = await runVerifyCli(['--journal', file]);
      expect(verified.exitCode).toBe(1);
      expect((JSON.parse(verified.stdout) as { problem: { code: string } }).problem.code).toBe('journal_corrupt');
    });
  }

  it('the server process on a journal whose id table was dropped prints one line and exits 2', async () => {
    const file = await writeJournal(2);
    (await startChecked(file)).close();
    tamper(file, (s) => s.exec('DROP TABLE journal_meta'));
    const { exit, stderr } = await runServerToExit({ DB_PATH: file, DATA_DIR: `${file}.data`, PORT: '0', SANDBOX_PORT: '0' });
    expect(stderr).not.toMatch(/\n\s+at /);
    expect(stderr.trim().split('\n')).toEqual([expect.stringMatching(new RegExp(`^Interlock did not start: journal damaged: .*journal id.*${literally(compiledToolCommand('verify', '--journal'))}`))]);
    expect(exit).toBe('2');
  });
});
