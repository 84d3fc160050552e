import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { isJsonObject } from '../../shared/json.ts';
import { BACKUP_FILES, type BackupManifest, type BackupPoint, BackupError, checkFiles, isWholeMs, MANIFEST_FILE, MANIFEST_FORMAT, manifestOf, pointOf, sha256OfFile } from './manifest.ts';

// An incremental backup is a folder too: the journal's entries and seals after its base's last
// seq with the small tables (one gzipped NDJSON file), the config, the key when asked, and
// `manifest.json` written last, naming its base by the sha256 of the base's manifest, its last seq
// and global head, so a chain cannot be mixed up with another.

/** An increment's manifest format: an Interlock that knows only full backups refuses it. */
export const INCREMENT_FORMAT = 'interlock-backup-increment-v1';

/** The files an increment may hold, by role. */
export const INCREMENT_FILES = { tail: 'increment.ndjson.gz', config: BACKUP_FILES.config, key: BACKUP_FILES.key } as const;
/** One role of a file in an increment. */
export type IncrementRole = keyof typeof INCREMENT_FILES;
const INCREMENT_ROLES = ['tail', 'config', 'key'] as const satisfies readonly IncrementRole[];

/** The backup an increment was taken since: where it was, its manifest's sha256, and where its journal stood. */
export interface IncrementBase {
  /** The base's folder, relative to the increment's (as `--since` named it). */
  dir: string;
  manifest_sha256: string;
  journal_id: string | null;
  entries: number;
  last_seq: number;
  global_head: string | null;
}

/** What an increment's `manifest.json` says. */
export interface IncrementManifest {
  format: typeof INCREMENT_FORMAT;
  taken_at_ms: number;
  /** Where the journal stood when the increment was read: its last entry is the increment's last. */
  point: BackupPoint;
  base: IncrementBase;
  /** Entries the increment carries (those after the base's last seq). */
  carried: number;
  files: Partial<Record<IncrementRole, { name: string; sha256: string; bytes: number }>>;
}

/** Either kind of manifest. */
export type AnyManifest = BackupManifest | IncrementManifest;

/** The sha256 (hex) of a backup's manifest file, which its increments name. */
export function manifestSha256(dir: string): string {
  return sha256OfFile(join(dir, MANIFEST_FILE));
}

/** Read a backup's manifest, full or increment, and check every file it names against its sha256. */
export function readAnyManifest(dir: string): AnyManifest {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(join(dir, MANIFEST_FILE), 'utf8'));
  } catch (error) {
    throw new BackupError(`${dir} holds no readable ${MANIFEST_FILE}, so it is no finished backup (${error instanceof Error ? error.message : String(error)})`);
  }
  const manifest = isJsonObject(parsed) && parsed.format === INCREMENT_FORMAT ? incrementManifestOf(parsed) : manifestOf(parsed);
  if (manifest === null) throw new BackupError(`${join(dir, MANIFEST_FILE)} is not an Interlock backup manifest (${MANIFEST_FORMAT} or ${INCREMENT_FORMAT})`);
  const named = manifest.format === MANIFEST_FORMAT ? manifest.files.journal : manifest.files.tail;
  if (named === undefined) throw new BackupError(`${join(dir, MANIFEST_FILE)} names no journal ${manifest.format === MANIFEST_FORMAT ? 'database' : 'increment'}`);
  checkFiles(dir, manifest.files);
  return manifest;
}

/** The increment manifest a parsed `manifest.json` is, or null when it is not one. */
export function incrementManifestOf(value: unknown): IncrementManifest | null {
  if (!isJsonObject(value) || value.format !== INCREMENT_FORMAT || !isWholeMs(value.taken_at_ms) || !isWholeMs(value.carried)) return null;
  const point = pointOf(value.point);
  const base = baseOf(value.base);
  if (point === null || base === null || !isJsonObject(value.files)) return null;
  const files: IncrementManifest['files'] = {};
  for (const role of INCREMENT_ROLES) {
    const file = value.files[role];
    if (file === undefined) continue;
    if (!isJsonObject(file) || file.name !== INCREMENT_FILES[role] || typeof file.sha256 !== 'string' || !/^[0-9a-f]{64}$/.test(file.sha256) || !isWholeMs(file.bytes)) return null;
    files[role] = { name: file.name, sha256: file.sha256, bytes: file.bytes };
  }
  return { format: INCREMENT_FORMAT, taken_at_ms: value.taken_at_ms, point, base, carried: value.carried, files };
}

function baseOf(value: unknown): IncrementBase | null {
  if (!isJsonObject(value)) return null;
  const { dir, manifest_sha256, journal_id, entries, last_seq, global_head } = value;
  if (typeof dir !== 'string' || dir === '' || typeof manifest_sha256 !== 'string' || !/^[0-9a-f]{64}$/.test(manifest_sha256)) return null;
  if (!(journal_id === null || typeof journal_id === 'string') || !(global_head === null || typeof global_head === 'string')) return null;
  if (!isWholeMs(entries) || !isWholeMs(last_seq)) return null;
  return { dir, manifest_sha256, journal_id, entries, last_seq, global_head };
}
