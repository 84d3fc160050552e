// One racer process for the journal contract's cases across processes on PostgreSQL
// (test/port/pg-journal.test.ts), speaking test/support/racer.ts's steps. Usage:
//   node --import tsx pg-race-child.ts <postgresql-url> <dispatch|claim> <effectId> <owner>
import { PgJournal } from '../../../db/pg/journal.ts';
import { openPgPool } from '../../../db/pg/pool.ts';
import { race } from '../../support/racer.ts';

const [url, op, effectId, owner] = process.argv.slice(2);
if (url === undefined || op === undefined || effectId === undefined || owner === undefined) throw new Error('usage: <postgresql-url> <op> <effectId> <owner>');
await race(op, effectId, owner, async () => {
  const pool = openPgPool({ url, max: 2, applicationName: `racer-${owner}` });
  // Connected before the go, so the race is over the lock, not over who connects first.
  (await pool.connect()).release();
  return { journal: new PgJournal({ pool, wallClockMs: () => Date.now() }), close: () => pool.end() };
});
