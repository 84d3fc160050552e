import Database from 'better-sqlite3';
import { JournalCorruptError } from '../server/journal/store.ts';
import { entryRowOfTuple } from './journal-rules.ts';
import type { HeadedRow, JournalFigures, JournalFile, StoredChain } from './port/journal-file.ts';
import { readTail } from './sqlite-journal-tail.ts';

// A journal file on a read-only connection of its own: the export's receipts, the ledger CSV's
// rows, a backup's copy and the figures its manifest records. A long read never holds the
// server's connection, and nothing here writes the file.

/**
 * Every entry of every chain that starts with a PROPOSED, chain after chain, newest chain first
 * and each chain's entries in order. `CROSS JOIN` fixes the loop order SQLite must use (the chain
 * heads outside, walked backwards on the kind index; each chain's entries inside, on
 * (effect_id, seq)), so the rows come out already in this order and nothing is sorted or held:
 * memory stays one page of each b-tree, however big the journal.
 */
export const CHAINS_NEWEST_FIRST = `
  SELECT e.seq, e.effect_id, e.kind, e.prev, e.hash, e.closes, e.ts_ms, e.body, e.reserves, h.seq
  FROM entries AS h CROSS JOIN entries AS e ON e.effect_id = h.effect_id
  WHERE h.kind = 'PROPOSED' AND h.prev IS NULL
  ORDER BY h.seq DESC, e.seq ASC`;

/** The packages this reader loads from node_modules at run time: a bundle of it leaves them to Node (a native module is never bundled). */
export const JOURNAL_FILE_PACKAGES: readonly string[] = ['better-sqlite3'];

/** Rows handed over at a time by `chainsNewestFirst`: enough that the hand-over costs nothing beside the read. */
const BATCH_ROWS = 512;

/** Pages copied per step: all of them, so the copy is one read of one snapshot and a busy writer cannot make it start over. */
const ALL_PAGES = 0x7fffffff;

/**
 * Open the journal at `file` on a connection of its own, read-only unless `writable` (a backup's
 * source: a write-ahead log a stopped server left is taken into the copy as SQLite recovers it;
 * nothing is written to the journal itself); a file that is not there is refused.
 */
export async function openJournalFile(file: string, options: { writable?: boolean } = {}): Promise<JournalFile> {
  if (file === '' || file === ':memory:') throw new Error('this journal is in memory and has no file to read');
  const sqlite = new Database(file, { readonly: options.writable !== true, fileMustExist: true });
  try {
    sqlite.pragma('busy_timeout = 5000');
  } catch (error) {
    sqlite.close();
    throw error;
  }
  return {
    location: file,
    figures: async () => figuresOf(sqlite),
    chainsInPeriod: (period, entriesMax) => chainsInPeriod(sqlite, period, entriesMax),
    chainsNewestFirst: () => chainsNewestFirst(sqlite),
    backupTo: (copy) => backupTo(sqlite, copy),
    readTail: (after, use) => readTail(sqlite, () => figuresOf(sqlite), after, use),
    close: async () => {
      sqlite.close();
    },
  };
}

/** True while another process holds the journal at `file` open (a server, a backup): SQLite refuses it an exclusive lock then. */
export async function journalFileInUse(file: string): Promise<boolean> {
  const sqlite = new Database(file, { fileMustExist: true, timeout: 200 });
  try {
    sqlite.pragma('locking_mode = EXCLUSIVE');
    sqlite.exec('BEGIN EXCLUSIVE');
    sqlite.exec('COMMIT');
    return false;
  } catch (error) {
    if (error instanceof Database.SqliteError && error.code.startsWith('SQLITE_BUSY')) return true;
    throw error;
  } finally {
    sqlite.close();
  }
}

function figuresOf(sqlite: Database.Database): JournalFigures {
  const count = sqlite.prepare<[], { n: number; last: number | null }>('SELECT count(*) AS n, max(seq) AS last FROM entries').get();
  const seal = sqlite.prepare<[], { global_hash: string }>('SELECT global_hash FROM journal_seals ORDER BY seq DESC LIMIT 1').get();
  const id = sqlite.prepare<[], { value: string }>("SELECT value FROM journal_meta WHERE name = 'journal_id'").get();
  const checkpoint = sqlite.prepare<[], { id: number | null }>('SELECT max(id) AS id FROM journal_checkpoints').get();
  const epochs = sqlite.prepare<[], { n: number }>("SELECT count(*) AS n FROM entries WHERE kind = 'EPOCH'").get();
  // The oldest DISPATCHED no entry has closed yet (`closes` marks the closing entries).
  const open = sqlite
    .prepare<[], { ts: number | null }>(
      `SELECT min(d.ts_ms) AS ts FROM entries d WHERE d.kind = 'DISPATCHED'
         AND NOT EXISTS (SELECT 1 FROM entries c WHERE c.effect_id = d.effect_id AND c.seq > d.seq AND c.closes = 1)`,
    )
    .get();
  return {
    journalId: id?.value ?? null,
    epochs: epochs?.n ?? 0,
    entries: count?.n ?? 0,
    lastSeq: count?.last ?? 0,
    globalHead: seal?.global_hash ?? null,
    oldestOpenDispatchMs: open?.ts ?? null,
    newestCheckpointId: checkpoint?.id ?? 0,
  };
}

async function* chainsInPeriod(sqlite: Database.Database, period: { fromMs: number; toMs: number }, entriesMax: number): AsyncGenerator<StoredChain> {
  const chains = sqlite.prepare<[number, number], { effect_id: string }>(
    'SELECT effect_id, MIN(seq) AS first_seq FROM entries WHERE ts_ms >= ? AND ts_ms < ? GROUP BY effect_id ORDER BY first_seq',
  );
  // Each entry with the seal at its seq and the one before it, for the export to hold the chain against.
  const chain = sqlite.prepare<{ effectId: string; toMs: number; max: number }, { seq: number; body: string; global: string | null; previous_global: string | null }>(
    `SELECT e.seq, e.body,
       (SELECT s.global_hash FROM journal_seals s WHERE s.seq = e.seq) AS global,
       (SELECT p.global_hash FROM journal_seals p WHERE p.seq < e.seq ORDER BY p.seq DESC LIMIT 1) AS previous_global
     FROM entries e WHERE e.effect_id = @effectId
       AND e.seq <= (SELECT MAX(seq) FROM entries WHERE effect_id = @effectId AND ts_ms < @toMs)
     ORDER BY e.seq LIMIT @max`,
  );
  // One read transaction: every chain is read from the same snapshot as the list.
  sqlite.exec('BEGIN');
  try {
    for (const { effect_id: effectId } of chains.iterate(period.fromMs, period.toMs)) {
      const rows = chain.all({ effectId, toMs: period.toMs, max: entriesMax + 1 });
      yield { effectId, bodies: rows.map((row) => row.body), seals: rows.map((row) => ({ seq: row.seq, global: row.global, previousGlobal: row.previous_global })) };
    }
  } finally {
    if (sqlite.inTransaction) sqlite.exec('COMMIT');
  }
}

async function* chainsNewestFirst(sqlite: Database.Database): AsyncGenerator<readonly HeadedRow[]> {
  let batch: HeadedRow[] = [];
  for (const tuple of sqlite.prepare(CHAINS_NEWEST_FIRST).raw(true).iterate()) {
    // An entries row, then its chain's head seq.
    if (!Array.isArray(tuple) || typeof tuple[9] !== 'number') throw new JournalCorruptError('a journal row has columns the schema does not allow', { seq: -1, effectId: '' });
    batch.push({ head: tuple[9], row: entryRowOfTuple(tuple.slice(0, 9)) });
    if (batch.length < BATCH_ROWS) continue;
    yield batch;
    batch = [];
  }
  if (batch.length > 0) yield batch;
}

/**
 * SQLite's online backup of the journal into `copy`, safe while a server writes (WAL: the copy is
 * one read transaction, a consistent snapshot). The backup keeps the source's WAL mode, and
 * anything that opened the copy in it left a write-ahead log and its index beside it, which no
 * manifest lists: the copy is checkpointed and put in rollback mode, then closed, so nothing is
 * left beside it.
 */
async function backupTo(sqlite: Database.Database, copy: string): Promise<void> {
  await sqlite.backup(copy, { progress: () => ALL_PAGES });
  const settled = new Database(copy, { fileMustExist: true });
  try {
    settled.pragma('wal_checkpoint(TRUNCATE)');
    settled.pragma('journal_mode = DELETE');
  } finally {
    settled.close();
  }
}
