// One racer process for the journal contract's cases across processes on PostgreSQL
// (test/port/pg-journal.test.ts), as test/db/support/race-child.ts is on SQLite. Usage:
//   node --import tsx pg-race-child.ts <postgresql-url> <dispatch|claim> <effectId> <owner>
// It speaks one JSON line per step on stdout and waits for the parent's word on stdin between
// steps, so the parent can release every racer into the same step at once:
//   -> {"step":"started"}  <- open   -> {"step":"ready"}  <- go   -> {"step":"done", ...}
import readline from 'node:readline';
import { PgJournal } from '../../../db/pg/journal.ts';
import { openPgPool } from '../../../db/pg/pool.ts';
import { blockWhileDispatched, fields } from '../../support/db-journals.ts';

const [url, op, effectId, owner] = process.argv.slice(2);
if (url === undefined || effectId === undefined || owner === undefined) throw new Error('usage: <postgresql-url> <op> <effectId> <owner>');
const words = readline.createInterface({ input: process.stdin })[Symbol.asyncIterator]();

function say(message: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify(message)}\n`);
}

async function awaitWord(word: string): Promise<void> {
  const next = await words.next();
  if (next.done || next.value !== word) throw new Error(`expected "${word}" from the parent`);
}

async function act(journal: PgJournal): Promise<Record<string, unknown>> {
  if (op === 'claim') return { granted: await journal.claim(effectId!, owner!, 60_000) };
  const result = await journal.appendIf('DISPATCHED', effectId!, blockWhileDispatched, fields('DISPATCHED', { owner: owner! }), { owner: owner!, ttlMs: 60_000 });
  return { blocker: result.blocker, wrote: result.entry !== null };
}

say({ step: 'started' });
await awaitWord('open');
const pool = openPgPool({ url, max: 2, applicationName: `racer-${owner}` });
// Connected before the go, so the race is over the lock, not over who connects first.
(await pool.connect()).release();
say({ step: 'ready' });
await awaitWord('go');
const outcome = await act(new PgJournal({ pool, wallClockMs: () => Date.now() }));
await pool.end();
say({ step: 'done', ...outcome });
process.exit(0);
