// One racer process for the journal contract's cases across processes (test/port/journal.test.ts). Usage:
//   node --import tsx race-child.ts <dbfile> <dispatch|claim> <effectId> <owner>
// It speaks one JSON line per step on stdout and waits for the parent's word on stdin between
// steps, so the parent can release every racer into the same step at once:
//   -> {"step":"started"}  <- open   -> {"step":"ready"}  <- go   -> {"step":"done", ...}
import readline from 'node:readline';
import { SqliteJournal } from '../../../db/journal-store.ts';
import { openDatabase } from '../../../db/open.ts';
import { blockWhileDispatched, fields } from '../../support/db-journals.ts';

const [file, op, effectId, owner] = process.argv.slice(2);
if (file === undefined || effectId === undefined || owner === undefined) throw new Error('usage: <dbfile> <op> <effectId> <owner>');
const words = readline.createInterface({ input: process.stdin })[Symbol.asyncIterator]();

function say(message: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify(message)}\n`);
}

async function awaitWord(word: string): Promise<void> {
  const next = await words.next();
  if (next.done || next.value !== word) throw new Error(`expected "${word}" from the parent`);
}

async function act(journal: SqliteJournal): Promise<Record<string, unknown>> {
  if (op === 'claim') return { granted: await journal.claim(effectId!, owner!, 60_000) };
  const result = await journal.appendIf('DISPATCHED', effectId!, blockWhileDispatched, fields('DISPATCHED', { owner: owner! }), { owner: owner!, ttlMs: 60_000 });
  return { blocker: result.blocker, wrote: result.entry !== null };
}

say({ step: 'started' });
await awaitWord('open');
const opened = openDatabase(file);
say({ step: 'ready' });
await awaitWord('go');
const outcome = await act(new SqliteJournal({ db: opened.db, wallClockMs: () => Date.now() }));
opened.close();
say({ step: 'done', ...outcome });
process.exit(0);
