import type Database from 'better-sqlite3';
import { openDatabase } from './open.ts';
import type { StoredCheckpoint } from './port/checkpoints.ts';
import { CopyTablesError, type JournalCopy, type TailEntry, type TailTables } from './port/journal-tail.ts';

// A restore's copy on SQLite, the tail of an incremental backup laid on it (sqlite-journal-tail.ts
// reads that tail). Plain SQL any database of the port accepts; nothing here is served.

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
