import type { JournalFigures } from '../../db/port/journal-file.ts';
import { createHash } from 'node:crypto';
import { closeSync, openSync, readSync } from 'node:fs';
import { join } from 'node:path';
import { openJournalFile } from '../../db/sqlite-journal-file.ts';
import { isJsonObject } from '../../shared/json.ts';

// A backup is a folder: the journal's database as SQLite's online backup copied it, the config,
// the receipt key when asked, and `manifest.json`, written last, which says what the backup holds
// and the sha256 of every file, so a restore refuses a folder that was cut short or changed.

/** The manifest's file name; a folder without it is no finished backup. */
export const MANIFEST_FILE = 'manifest.json';
/** The manifest's format, so a later one can still read an older backup. */
export const MANIFEST_FORMAT = 'interlock-backup-v1';

/** The files a backup may hold, by role. */
export const BACKUP_FILES = { journal: 'interlock.sqlite', config: 'interlock.yaml', key: 'receipt-signing-key.pem' } as const;
/** One role of a file in a backup. */
export type BackupRole = keyof typeof BACKUP_FILES;
/** The roles, journal first. */
export const BACKUP_ROLES = ['journal', 'config', 'key'] as const satisfies readonly BackupRole[];

/** Where the journal stood when the backup was taken. */
export interface BackupPoint {
  /** The journal's id (the origin of its checkpoints), null for a journal that has none yet. */
  journal_id: string | null;
  /** The journal's epoch (0 before any restore). */
  epoch: number;
  /** Entries in the journal, and the seq of the last one (0 for none). */
  entries: number;
  last_seq: number;
  /** The global chain's hash after the last entry, null for an empty journal. */
  global_head: string | null;
  /** The oldest dispatch still open at the backup point (wall ms), null for none: its refund may be at Stripe already. */
  oldest_open_dispatch_ms: number | null;
  /** The newest signed checkpoint's id (0 for none): an increment since this backup carries those after it. Absent in earlier backups. */
  newest_checkpoint_id?: number;
}

/** What `manifest.json` says. */
export interface BackupManifest {
  format: typeof MANIFEST_FORMAT;
  /** Wall clock when the online backup finished: every entry after it is not in the backup. */
  taken_at_ms: number;
  point: BackupPoint;
  /** Every file of the backup but the manifest, with its sha256 (hex) and size. */
  files: Partial<Record<BackupRole, { name: string; sha256: string; bytes: number }>>;
}

/** A backup folder that cannot be restored: the message says why. */
export class BackupError extends Error {}

/** How much of a file is hashed at a time: a journal of 10,000,000 entries is an 18 GB file. */
const HASH_CHUNK_BYTES = 1 << 20;

/**
 * The sha256 (hex) of a file's bytes, read a megabyte at a time: memory stays one chunk, and a
 * file past 2 GiB (which readFileSync refuses) is hashed like any other.
 */
export function sha256OfFile(path: string): string {
  const hash = createHash('sha256');
  const chunk = Buffer.allocUnsafe(HASH_CHUNK_BYTES);
  const fd = openSync(path, 'r');
  try {
    for (let read = readSync(fd, chunk); read > 0; read = readSync(fd, chunk)) hash.update(chunk.subarray(0, read));
  } finally {
    closeSync(fd);
  }
  return hash.digest('hex');
}

/** Where a journal stands, as a manifest records it, from the figures its file gives. */
export function pointOfFigures(figures: JournalFigures): BackupPoint {
  return {
    journal_id: figures.journalId,
    epoch: figures.epochs,
    entries: figures.entries,
    last_seq: figures.lastSeq,
    global_head: figures.globalHead,
    oldest_open_dispatch_ms: figures.oldestOpenDispatchMs,
    newest_checkpoint_id: figures.newestCheckpointId,
  };
}

/** Where a journal's database stands, read from the file (a backup's copy, opened read-only). */
export async function readBackupPoint(file: string): Promise<BackupPoint> {
  const journal = await openJournalFile(file);
  try {
    return pointOfFigures(await journal.figures());
  } finally {
    await journal.close();
  }
}

/** Check every file a manifest names against its sha256: one missing, unreadable or changed is refused. */
export function checkFiles(dir: string, files: Readonly<Record<string, { name: string; sha256: string }>>): void {
  for (const [role, file] of Object.entries(files)) {
    const path = join(dir, file.name);
    let sha256: string;
    try {
      sha256 = sha256OfFile(path);
    } catch {
      throw new BackupError(`the backup's ${role} file ${path} is missing or unreadable`);
    }
    if (sha256 !== file.sha256) throw new BackupError(`the backup's ${role} file ${path} is not the one the manifest names (sha256 ${sha256}, manifest ${file.sha256}): it was changed or cut short`);
  }
}

/** The manifest a parsed `manifest.json` is, or null when it is not one. */
export function manifestOf(value: unknown): BackupManifest | null {
  if (!isJsonObject(value) || value.format !== MANIFEST_FORMAT || !isWholeMs(value.taken_at_ms)) return null;
  const point = pointOf(value.point);
  if (point === null || !isJsonObject(value.files)) return null;
  const files: BackupManifest['files'] = {};
  for (const role of BACKUP_ROLES) {
    const file = value.files[role];
    if (file === undefined) continue;
    if (!isJsonObject(file) || file.name !== BACKUP_FILES[role] || typeof file.sha256 !== 'string' || !/^[0-9a-f]{64}$/.test(file.sha256) || !isWholeMs(file.bytes)) return null;
    files[role] = { name: file.name, sha256: file.sha256, bytes: file.bytes };
  }
  return { format: MANIFEST_FORMAT, taken_at_ms: value.taken_at_ms, point, files };
}

/** The backup point a parsed manifest records, or null when it is not one. */
export function pointOf(value: unknown): BackupPoint | null {
  if (!isJsonObject(value)) return null;
  const { journal_id, epoch, entries, last_seq, global_head, oldest_open_dispatch_ms, newest_checkpoint_id } = value;
  if (!(journal_id === null || typeof journal_id === 'string') || !(global_head === null || typeof global_head === 'string')) return null;
  if (!isWholeMs(epoch) || !isWholeMs(entries) || !isWholeMs(last_seq)) return null;
  if (!(oldest_open_dispatch_ms === null || isWholeMs(oldest_open_dispatch_ms))) return null;
  const point: BackupPoint = { journal_id, epoch, entries, last_seq, global_head, oldest_open_dispatch_ms };
  if (newest_checkpoint_id === undefined) return point;
  return isWholeMs(newest_checkpoint_id) ? { ...point, newest_checkpoint_id } : null;
}

/** A whole, non-negative number (ms, a count, a seq). */
export function isWholeMs(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}
