import type Database from 'better-sqlite3';
import { JournalCorruptError } from '../server/journal/store.ts';
import type { JournalFigures, JournalTail } from './port/journal-file.ts';
import type { StoredCheckpoint } from './port/checkpoints.ts';
import type { TailEntry, TailTables } from './port/journal-tail.ts';
import type { GrantRow } from './schema.ts';

// An incremental backup on SQLite: the tail of a journal read from one snapshot (the restore's copy
// it is laid on is sqlite-journal-copy.ts). Plain SQL any database of the port accepts; it imports
// nothing that opens or migrates a database, so the ledger CSV's worker can bundle it.

/** Entries handed over at a time: a batch is a few hundred KiB, whatever the tail's length. */
const BATCH_ROWS = 1_000;

const TAIL_ENTRIES = `
  SELECT e.seq, e.effect_id, e.kind, e.prev, e.hash, e.closes, e.ts_ms, e.body, e.reserves, s.global_hash
  FROM entries AS e LEFT JOIN journal_seals AS s ON s.seq = e.seq
  WHERE e.seq > ? ORDER BY e.seq`;

interface TailRowSql {
  seq: number;
  effect_id: string;
  kind: string;
  prev: string | null;
  hash: string;
  closes: number;
  ts_ms: number;
  body: string;
  reserves: string | null;
  global_hash: string | null;
}

/**
 * Read the journal after `after.seq` in one read transaction: `use` gets the figures, the small
 * tables (the checkpoints after `after.checkpointId`) and the entries of one snapshot, however
 * much a server writes meanwhile.
 */
export async function readTail<T>(
  sqlite: Database.Database,
  figuresOf: () => JournalFigures,
  after: { seq: number; checkpointId: number },
  use: (tail: JournalTail) => Promise<T>,
): Promise<T> {
  sqlite.exec('BEGIN');
  try {
    const figures = figuresOf();
    const anchor = after.seq === 0 ? null : (sqlite.prepare<[number], { global_hash: string }>('SELECT global_hash FROM journal_seals WHERE seq = ?').get(after.seq)?.global_hash ?? null);
    return await use({ figures, anchor, tables: tablesOf(sqlite, after.checkpointId), entries: entriesAfter(sqlite, after.seq) });
  } finally {
    if (sqlite.inTransaction) sqlite.exec('COMMIT');
  }
}

function tablesOf(sqlite: Database.Database, afterCheckpointId: number): TailTables {
  const meta = sqlite.prepare<[], { name: string; value: string }>('SELECT name, value FROM journal_meta ORDER BY name').all();
  const checkpoints = sqlite
    .prepare<[number], StoredCheckpoint>('SELECT id, epoch, size, head, note, signed_at_ms AS signedAtMs FROM journal_checkpoints WHERE id > ? ORDER BY id')
    .all(afterCheckpointId);
  const grants = sqlite
    .prepare<[], GrantRow>(
      'SELECT lease_id AS leaseId, max_cents AS maxCents, expires_at_ms AS expiresAtMs, granted_at_ms AS grantedAtMs, revoked_at_ms AS revokedAtMs FROM grants ORDER BY lease_id',
    )
    .all();
  return { meta, checkpoints: checkpoints.map((c) => ({ ...c })), grants: grants.map((g) => ({ ...g })) };
}

async function* entriesAfter(sqlite: Database.Database, afterSeq: number): AsyncGenerator<readonly TailEntry[]> {
  let batch: TailEntry[] = [];
  for (const row of sqlite.prepare<[number], TailRowSql>(TAIL_ENTRIES).iterate(afterSeq)) {
    if (row.global_hash === null) throw new JournalCorruptError(`journal entry seq ${row.seq} has no seal of the global chain`, { seq: row.seq, effectId: row.effect_id });
    batch.push({
      seq: row.seq,
      effectId: row.effect_id,
      kind: row.kind,
      prev: row.prev,
      hash: row.hash,
      closes: row.closes,
      tsMs: row.ts_ms,
      body: row.body,
      reserves: row.reserves,
      globalHash: row.global_hash,
    });
    if (batch.length < BATCH_ROWS) continue;
    yield batch;
    batch = [];
  }
  if (batch.length > 0) yield batch;
}
