import fs from 'node:fs';
import path from 'node:path';
import type Database from 'better-sqlite3';
import { SqliteJournal } from '../../db/journal-store.ts';
import { openDatabase, type OpenDatabase } from '../../db/open.ts';
import { storageOver } from '../../db/sqlite-storage.ts';
import { JournalDamagedError } from '../../server/integrity/damage.ts';
import { canonical, globalHashOf, sealEntry } from '../../server/journal/hash.ts';
import { checkJournalAtStart, type StartCheckOutcome } from '../../server/integrity/start-check.ts';
import type { SealedEntry } from '../../server/journal/store.ts';
import { Views } from '../../server/views/views.ts';
import { effectIdOf, fakeClock, fields, makeTempDir } from './db-journals.ts';

// A journal file to damage as an attacker with write access to the data folder would, and the
// start-up check run on it as `npm start` runs it.

/** The append-only guards, as the migrations make them: dropped to tamper, put back to hide it. */
const GUARDED_TABLES = ['entries', 'journal_seals', 'journal_checkpoints'];

/** A journal of `effects` chains, three entries each, interleaved as traffic writes them. */
export async function writeJournal(effects = 4): Promise<string> {
  const file = path.join(makeTempDir(), 'journal.sqlite');
  const opened = openDatabase(file);
  const journal = new SqliteJournal({ db: opened.db, ...fakeClock() });
  for (const kind of ['PROPOSED', 'AUTHORIZED', 'REFUSED'] as const) {
    for (let n = 1; n <= effects; n++) await journal.append(kind, effectIdOf(n), fields(kind));
  }
  opened.close();
  return file;
}

/** A copy of a journal file, to damage without touching the original. */
export function copyJournal(file: string): string {
  const copy = path.join(makeTempDir(), 'journal.sqlite');
  fs.copyFileSync(file, copy);
  return copy;
}

/**
 * Change the file with the guards off, as someone who can write it would: `edit` runs with every
 * append-only trigger dropped; with `hide`, they are put back after it, so only the data tells.
 */
export function tamper(file: string, edit: (sqlite: Database.Database) => void, options: { hide?: boolean } = {}): void {
  const opened = openDatabase(file);
  const { sqlite } = opened;
  const triggers = sqlite.prepare(`SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name IN (${GUARDED_TABLES.map(() => '?').join(', ')})`).all(...GUARDED_TABLES) as Array<{ name: string; sql: string }>;
  for (const { name } of triggers) sqlite.exec(`DROP TRIGGER "${name}"`);
  edit(sqlite);
  if (options.hide !== false) for (const { sql } of triggers) sqlite.exec(sql);
  opened.close();
}

/** Run start-up's check on a journal file: what it found, or the damage it refused. */
export async function checkAtStart(file: string): Promise<StartCheckOutcome | JournalDamagedError> {
  const opened: OpenDatabase = openDatabase(file);
  try {
    const journal = new SqliteJournal({ db: opened.db, ...fakeClock() });
    const views = new Views({ journal, inboxName: 'inbox', nowMs: () => 0, log: { fatal: () => {}, error: () => {} } });
    return await checkJournalAtStart({ storage: storageOver(opened), journal: views.journal, views, log: { info: () => {} } });
  } catch (error) {
    if (error instanceof JournalDamagedError) return error;
    throw error;
  } finally {
    opened.close();
  }
}

/** Rewrite the entry at `seq` with `patch` over its fields, and a hash that holds over the new body (a hash is no secret); its link is kept. */
export function rewriteEntry(sqlite: Database.Database, seq: number, patch: Record<string, unknown>): void {
  const body = sqlite.prepare('SELECT body FROM entries WHERE seq = ?').pluck().get(seq) as string;
  const { hash: _old, ...fields } = JSON.parse(body);
  const rewritten = sealEntry({ ...fields, ...patch });
  sqlite.prepare('UPDATE entries SET body = ?, hash = ?, prev = ? WHERE seq = ?').run(canonical(rewritten), rewritten.hash, rewritten.prev, seq);
}

/** Relink the entries of `effectId` after `seq` to the entry before each, rehashed: a chain whose every hash and link holds again. */
export function relinkChain(sqlite: Database.Database, effectId: string, seq: number): void {
  const rows = sqlite.prepare('SELECT seq, hash FROM entries WHERE effect_id = ? AND seq >= ? ORDER BY seq').all(effectId, seq) as Array<{ seq: number; hash: string }>;
  let prev = rows[0]?.hash;
  for (const row of rows.slice(1)) {
    rewriteEntry(sqlite, row.seq, { prev });
    prev = sqlite.prepare('SELECT hash FROM entries WHERE seq = ?').pluck().get(row.seq) as string;
  }
}

/** Recompute every seal from `seq` on, each from the one before: what someone hiding rewritten rows from the global chain does. */
export function resealFrom(sqlite: Database.Database, seq: number): void {
  let previous = (sqlite.prepare('SELECT global_hash FROM journal_seals WHERE seq < ? ORDER BY seq DESC LIMIT 1').pluck().get(seq) as string | undefined) ?? null;
  const rows = sqlite.prepare('SELECT seq, hash FROM entries WHERE seq >= ? ORDER BY seq').all(seq) as Array<{ seq: number; hash: string }>;
  const update = sqlite.prepare('UPDATE journal_seals SET global_hash = ? WHERE seq = ?');
  for (const row of rows) {
    previous = globalHashOf(previous, row.seq, row.hash);
    update.run(previous, row.seq);
  }
}

/** One chain as the journal file stores it, with its seals, read on a connection of its own. */
export async function storedSealedChain(file: string, effectId: string): Promise<SealedEntry[]> {
  const opened = openDatabase(file);
  try {
    return await new SqliteJournal({ db: opened.db, ...fakeClock() }).sealedChain(effectId);
  } finally {
    opened.close();
  }
}
