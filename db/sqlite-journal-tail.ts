import type Database from 'better-sqlite3';
import { JournalCorruptError } from '../server/journal/store.ts';
import { openDatabase } from './open.ts';
import type { StoredCheckpoint } from './port/checkpoints.ts';
import type { JournalFigures, JournalTail } from './port/journal-file.ts';
import { CopyTablesError, type JournalCopy, type TailEntry, type TailTables } from './port/journal-tail.ts';
import type { GrantRow } from './schema.ts';

// An incremental backup on SQLite: the tail of a journal read from one snapshot, and a restore's
// copy the tail is laid on. Plain SQL any database of the port accepts; nothing here is served.

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

/** Open the restore's copy at `file` (migrated to this Interlock's schema) to lay increments on. */
export async function openJournalCopy(file: string): Promise<JournalCopy> {
  const { sqlite, close } = openDatabase(file);
  // A scratch file nothing serves: a restore cut short starts over from the backup, so the appends
  // need not wait for the disk each; everything is made durable once, when the copy is closed.
  sqlite.pragma('synchronous = OFF');
  const insertEntry = sqlite.prepare(
    'INSERT INTO entries (seq, effect_id, kind, prev, hash, closes, ts_ms, body, reserves) VALUES (@seq, @effectId, @kind, @prev, @hash, @closes, @tsMs, @body, @reserves)',
  );
  const insertSeal = sqlite.prepare('INSERT INTO journal_seals (seq, global_hash) VALUES (?, ?)');
  const append = sqlite.transaction((entries: readonly TailEntry[]) => {
    for (const { globalHash, ...row } of entries) {
      insertEntry.run(row);
      insertSeal.run(row.seq, globalHash);
    }
  });
  return {
    head: async () => {
      const count = sqlite.prepare<[], { n: number; last: number | null }>('SELECT count(*) AS n, max(seq) AS last FROM entries').get();
      const seal = sqlite.prepare<[], { global_hash: string }>('SELECT global_hash FROM journal_seals ORDER BY seq DESC LIMIT 1').get();
      const checkpoint = sqlite.prepare<[], { id: number | null }>('SELECT max(id) AS id FROM journal_checkpoints').get();
      return { lastSeq: count?.last ?? 0, globalHead: seal?.global_hash ?? null, entries: count?.n ?? 0, newestCheckpointId: checkpoint?.id ?? 0 };
    },
    appendEntries: async (entries) => {
      append.immediate(entries);
    },
    putTables: async (tables) => {
      sqlite.transaction(() => putTables(sqlite, tables)).immediate();
    },
    close: async () => {
      try {
        sqlite.pragma('synchronous = FULL');
        sqlite.pragma('wal_checkpoint(TRUNCATE)');
      } finally {
        close();
      }
    },
  };
}

function putTables(sqlite: Database.Database, tables: TailTables): void {
  const setMeta = sqlite.prepare('INSERT INTO journal_meta (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value');
  for (const { name, value } of tables.meta) setMeta.run(name, value);
  sqlite.prepare('DELETE FROM grants').run();
  const insertGrant = sqlite.prepare(
    'INSERT INTO grants (lease_id, max_cents, expires_at_ms, granted_at_ms, revoked_at_ms) VALUES (@leaseId, @maxCents, @expiresAtMs, @grantedAtMs, @revokedAtMs)',
  );
  for (const grant of tables.grants) insertGrant.run(grant);
  const held = sqlite.prepare<[number], StoredCheckpoint>('SELECT id, epoch, size, head, note, signed_at_ms AS signedAtMs FROM journal_checkpoints WHERE id = ?');
  const insertCheckpoint = sqlite.prepare('INSERT INTO journal_checkpoints (id, epoch, size, head, note, signed_at_ms) VALUES (@id, @epoch, @size, @head, @note, @signedAtMs)');
  for (const checkpoint of tables.checkpoints) {
    const there = held.get(checkpoint.id);
    if (there === undefined) insertCheckpoint.run(checkpoint);
    else if (!sameCheckpoint(there, checkpoint)) throw new CopyTablesError(`checkpoint ${checkpoint.id} differs from the one the journal already holds under that id`);
  }
}

function sameCheckpoint(a: StoredCheckpoint, b: StoredCheckpoint): boolean {
  return a.epoch === b.epoch && a.size === b.size && a.head === b.head && a.note === b.note && a.signedAtMs === b.signedAtMs;
}
