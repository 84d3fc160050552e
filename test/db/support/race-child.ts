// One racer process for the journal contract's cases across processes (test/port/journal.test.ts),
// speaking test/support/racer.ts's steps. Usage:
//   node --import tsx race-child.ts <dbfile> <dispatch|claim> <effectId> <owner>
import { SqliteJournal } from '../../../db/journal-store.ts';
import { openDatabase } from '../../../db/open.ts';
import { race } from '../../support/racer.ts';

const [file, op, effectId, owner] = process.argv.slice(2);
if (file === undefined || op === undefined || effectId === undefined || owner === undefined) throw new Error('usage: <dbfile> <op> <effectId> <owner>');
await race(op, effectId, owner, async () => {
  const opened = openDatabase(file);
  return { journal: new SqliteJournal({ db: opened.db, wallClockMs: () => Date.now() }), close: async () => opened.close() };
});
