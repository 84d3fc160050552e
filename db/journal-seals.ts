import type Database from 'better-sqlite3';
import { globalHashOf } from '../server/journal/hash.ts';
import { JournalCorruptError } from '../server/journal/store.ts';
import { entryOfRow, entryRowOfTuple } from './journal-rules.ts';

// Journals written before the global chain have entries and no seals. The append-only triggers
// forbid adding a column's value to old rows, so their global hashes go to the side table
// `journal_seals`, once, after the whole journal verified and a backup was taken. A journal
// with some seals, or with a checkpoint, was sealed before: one missing seal there is damage,
// and is reported by the replay, never papered over by sealing again.

/** Rows read per page while verifying and sealing. */
const PAGE_ROWS = 10_000;

/** What sealing did: how many entries it sealed, and where the backup taken before it is. */
export interface SealOutcome {
  sealed: number;
  backupFile: string | null;
}

/** Why a journal was not sealed: it holds checkpoints but no seals, or it fails verification. */
export class SealRefusedError extends Error {
  constructor(
    message: string,
    readonly corrupt: JournalCorruptError | null,
  ) {
    super(message);
  }
}

/** Whether one of the journal's tables holds a row: one probe of its first, where a count would read them all. */
function hasRows(sqlite: Database.Database, table: 'entries' | 'journal_seals'): boolean {
  return sqlite.prepare<[], { found: number }>(`SELECT EXISTS (SELECT 1 FROM ${table}) AS found`).get()?.found === 1;
}

/** True when the journal has entries and no global chain yet: one an earlier Interlock wrote. */
export function needsSealing(sqlite: Database.Database): boolean {
  return hasRows(sqlite, 'entries') && !hasRows(sqlite, 'journal_seals');
}

/**
 * Seal a journal written before the global chain: verify every entry (its hash, its shape, its
 * link to the entry before it in its chain), back the database up to `backupFile`, then write
 * every entry's global hash in one transaction. Does nothing to a journal already sealed (or
 * empty). Refused (SealRefusedError), with nothing written, for a journal that fails verification
 * or that has checkpoints: that one was sealed before and has lost its seals.
 */
export async function sealUnsealedJournal(sqlite: Database.Database, backupFile: string): Promise<SealOutcome> {
  if (!needsSealing(sqlite)) return { sealed: 0, backupFile: null };
  const checkpoints = sqlite.prepare<[], { n: number }>('SELECT count(*) AS n FROM journal_checkpoints').get()?.n ?? 0;
  if (checkpoints > 0) {
    throw new SealRefusedError(`the journal has ${checkpoints} checkpoints but no global seals: the seals were removed`, null);
  }
  const page = sqlite.prepare<[number, number], unknown[]>('SELECT seq, effect_id, kind, prev, hash, closes, ts_ms, body, reserves FROM entries WHERE seq > ? ORDER BY seq LIMIT ?').raw(true);
  const verified: Array<{ seq: number; hash: string }> = [];
  const tails = new Map<string, string>();
  try {
    for (let after = 0; ; ) {
      const tuples = page.all(after, PAGE_ROWS);
      if (tuples.length === 0) break;
      for (const tuple of tuples) {
        const row = entryRowOfTuple(tuple);
        const entry = entryOfRow(row);
        if (entry.prev !== (tails.get(row.effectId) ?? null)) {
          throw new JournalCorruptError(`journal entry seq ${row.seq} does not link to the entry before it in its chain`, { seq: row.seq, effectId: row.effectId });
        }
        tails.set(row.effectId, entry.hash);
        verified.push({ seq: row.seq, hash: entry.hash });
        after = row.seq;
      }
    }
  } catch (error) {
    if (!(error instanceof JournalCorruptError)) throw error;
    throw new SealRefusedError(`the journal was not sealed because it fails verification: ${error.message}`, error);
  }
  await sqlite.backup(backupFile);
  const insert = sqlite.prepare('INSERT INTO journal_seals (seq, global_hash) VALUES (?, ?)');
  sqlite.transaction(() => {
    // Another process may have sealed it since the count: then there is nothing left to do.
    if (hasRows(sqlite, 'journal_seals')) return;
    let previous: string | null = null;
    for (const { seq, hash } of verified) {
      previous = globalHashOf(previous, seq, hash);
      insert.run(seq, previous);
    }
  }).immediate();
  return { sealed: verified.length, backupFile };
}
