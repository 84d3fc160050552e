// The racer processes' side of the journal contract's cases across processes (on SQLite,
// test/db/support/race-child.ts; on PostgreSQL, test/port/support/pg-race-child.ts). A racer
// speaks one JSON line per step on stdout and waits for the parent's word on stdin between steps,
// so the parent can release every racer into the same step at once:
//   -> {"step":"started"}  <- open   -> {"step":"ready"}  <- go   -> {"step":"done", ...}
import readline from 'node:readline';
import type { StorageJournal } from '../../db/port/journal.ts';
import { blockWhileDispatched, fields } from './db-journals.ts';

/** A journal a racer opened, and how it lets it go. */
export interface OpenedRacer {
  journal: Pick<StorageJournal, 'claim' | 'appendIf'>;
  close(): Promise<void>;
}

/** Race once: `open` when told, then, at the word, claim `effectId` or append its DISPATCHED as `owner`, and say what came of it. */
export async function race(op: string, effectId: string, owner: string, open: () => Promise<OpenedRacer>): Promise<never> {
  const words = readline.createInterface({ input: process.stdin })[Symbol.asyncIterator]();
  const say = (message: Record<string, unknown>) => process.stdout.write(`${JSON.stringify(message)}\n`);
  const awaitWord = async (word: string) => {
    const next = await words.next();
    if (next.done || next.value !== word) throw new Error(`expected "${word}" from the parent`);
  };
  say({ step: 'started' });
  await awaitWord('open');
  const { journal, close } = await open();
  say({ step: 'ready' });
  await awaitWord('go');
  let outcome: Record<string, unknown>;
  if (op === 'claim') outcome = { granted: await journal.claim(effectId, owner, 60_000) };
  else {
    const result = await journal.appendIf('DISPATCHED', effectId, blockWhileDispatched, fields('DISPATCHED', { owner }), { owner, ttlMs: 60_000 });
    outcome = { blocker: result.blocker, wrote: result.entry !== null };
  }
  await close();
  say({ step: 'done', ...outcome });
  process.exit(0);
}
