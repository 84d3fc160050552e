import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { HISTORY_ENTRIES, type HistorySize } from './history-args.ts';
import { ensureJournals } from './history-journals.ts';
import type { BenchCluster } from './pg-cluster.ts';
import type { Plan } from './stages.ts';

// The `postgres` stage's journals: the history stage's SQLite journals (kept in KEPT_JOURNALS when
// an earlier run left them there, else generated as it generates them), their rows copied into a
// PostgreSQL database by COPY, as they are: the same entries, seals and journal id.

/** Where a history run keeps its journals (`--journals /var/tmp/hist`): read here, never written. */
export const KEPT_JOURNALS = '/var/tmp/hist';

/** Rows sent to COPY between two waits for the pipe to drain. */
const ROWS_PER_WRITE = 500;

/**
 * The SQLite journal of `size` entries: at the full run's sizes a kept one when it holds that many,
 * else (and always in a smoke run, whose sizes are tiny) one generated in `dir`.
 */
export async function sqliteJournalOf(plan: Plan, dir: string, size: HistorySize): Promise<string> {
  const kept = path.join(KEPT_JOURNALS, `journal-${size}.sqlite`);
  if (plan.historyEntries[size] >= HISTORY_ENTRIES[size] && fs.existsSync(kept) && countOf(kept) >= plan.historyEntries[size]) return kept;
  const journals = await ensureJournals(path.join(dir, 'pg-journals'), [size], plan.historyEntries);
  return journals.files[size]!;
}

function countOf(file: string): number {
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    return db.prepare('SELECT count(*) FROM entries').pluck().get() as number;
  } finally {
    db.close();
  }
}

/** A value in COPY's text format: `\N` for null, and the four characters it escapes. */
function copyText(value: unknown): string {
  if (value === null || value === undefined) return '\\N';
  return String(value).replace(/\\/g, '\\\\').replace(/\t/g, '\\t').replace(/\n/g, '\\n').replace(/\r/g, '\\r');
}

/** Stream every row of `query` to `stdin` in COPY's text format, waiting for the pipe when it is full. */
async function streamRows(db: Database.Database, query: string, stdin: NodeJS.WritableStream): Promise<number> {
  let lines: string[] = [];
  let rows = 0;
  const flush = async () => {
    if (lines.length === 0) return;
    const ok = stdin.write(`${lines.join('\n')}\n`);
    lines = [];
    if (!ok) await new Promise((resolve) => stdin.once('drain', resolve));
  };
  for (const row of db.prepare(query).raw().iterate() as Iterable<unknown[]>) {
    lines.push(row.map(copyText).join('\t'));
    rows += 1;
    if (lines.length >= ROWS_PER_WRITE) await flush();
  }
  await flush();
  return rows;
}

/** What a copy put in the database, checked against the SQLite journal it came from. */
export interface CopiedJournal {
  entries: number;
  seconds: number;
}

/**
 * Copy the entries, seals and journal id of the SQLite journal `file` into `database` (migrated,
 * empty), move its head to the last seal, and check that the database holds as many entries and
 * seals as the file, ending at the same global hash. Whether every entry holds against its seals is
 * the first start's check, which replays them all.
 */
export async function copyJournalIn(cluster: BenchCluster, database: string, file: string): Promise<CopiedJournal> {
  const startMs = Date.now();
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    let entries = 0;
    await cluster.copyIn(database, 'COPY entries (seq, effect_id, kind, prev, hash, closes, ts_ms, body, reserves) FROM STDIN', async (stdin) => {
      entries = await streamRows(db, 'SELECT seq, effect_id, kind, prev, hash, closes, ts_ms, body, reserves FROM entries ORDER BY seq', stdin);
    });
    await cluster.copyIn(database, 'COPY journal_seals (seq, global_hash) FROM STDIN', async (stdin) => {
      await streamRows(db, 'SELECT seq, global_hash FROM journal_seals ORDER BY seq', stdin);
    });
    const last = db.prepare('SELECT seq, global_hash FROM journal_seals ORDER BY seq DESC LIMIT 1').get() as { seq: number; global_hash: string };
    const journalId = db.prepare("SELECT value FROM journal_meta WHERE name = 'journal_id'").pluck().get() as string | undefined;
    const quote = (text: string) => `'${text.replace(/'/g, "''")}'`;
    await cluster.psql(
      database,
      [
        `UPDATE journal_head SET seq = ${last.seq}, global_hash = ${quote(last.global_hash)}, size = ${entries} WHERE id = 1`,
        ...(journalId === undefined ? [] : [`INSERT INTO journal_meta (name, value) VALUES ('journal_id', ${quote(journalId)})`]),
        'ANALYZE',
      ].join('; '),
    );
    const [count, seals, head] = (await cluster.psql(database, 'SELECT (SELECT count(*) FROM entries), (SELECT count(*) FROM journal_seals), (SELECT global_hash FROM journal_seals ORDER BY seq DESC LIMIT 1)')).trim().split('|');
    if (Number(count) !== entries || Number(seals) !== entries || head !== last.global_hash) {
      throw new Error(`the copy of ${file} holds ${count} entries and ${seals} seals ending at ${head}, not ${entries} ending at ${last.global_hash}`);
    }
    return { entries, seconds: (Date.now() - startMs) / 1000 };
  } finally {
    db.close();
  }
}
