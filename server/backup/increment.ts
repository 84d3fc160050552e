import { renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { openJournalFile } from '../../db/sqlite-journal-file.ts';
import { BACKUP_FILE_MODE, type BackupEnv, copyConfigAndKey, prepareBackupFolder } from './backup.ts';
import { newestOf, readChain } from './chain.ts';
import { writeIncrementFile } from './increment-file.ts';
import { type IncrementManifest, INCREMENT_FILES, INCREMENT_FORMAT, manifestSha256 } from './increment-manifest.ts';
import { BackupError, MANIFEST_FILE, pointOfFigures, sha256OfFile } from './manifest.ts';

// `npm run backup -- <dir> --since <earlier backup>`: only what changed since that backup (full or
// itself an increment): the journal's entries and seals after its last seq, the small tables in
// full, the config, the key when asked. Read from one snapshot, safe while the server runs.

/** What an increment wrote, and what its operator must hear. */
export interface IncrementResult {
  dir: string;
  manifest: IncrementManifest;
  warnings: string[];
}

/**
 * Take an increment into `dir` (new, or empty) since the backup in `since`: refused when that
 * backup does not check (a file changed or missing) or is not of this journal at its last seq
 * (another journal, or one restored to an earlier point since). The manifest is written last.
 */
export async function takeIncrement(options: { env: BackupEnv; dir: string; since: string; withKey: boolean; wallMs?: () => number }): Promise<IncrementResult> {
  const { env, dir, since, withKey } = options;
  const wallMs = options.wallMs ?? Date.now;
  // The whole chain behind it must restore: every link there, whole, each the base of the next.
  const base = newestOf(readChain(since));
  const baseSha256 = manifestSha256(since);
  prepareBackupFolder(env, dir);
  const file = join(dir, INCREMENT_FILES.tail);
  const partial = `${file}.partial`;
  writeFileSync(partial, '', { mode: BACKUP_FILE_MODE });
  const source = await openJournalFile(env.dbPath, { writable: true });
  const { point, carried } = await source
    // A base that does not say which checkpoints it holds (taken before it was recorded) is given them all again.
    .readTail({ seq: base.point.last_seq, checkpointId: base.point.newest_checkpoint_id ?? 0 }, async (tail) => {
      const { figures } = tail;
      const notThis = (why: string) => new BackupError(`the journal at ${env.dbPath} is not the one the backup in ${since} was taken of (${why}): take a full backup`);
      if (base.point.journal_id !== null && figures.journalId !== base.point.journal_id) throw notThis(`its id is ${figures.journalId ?? 'none'}, the backup's ${base.point.journal_id}`);
      if (figures.lastSeq < base.point.last_seq) throw notThis(`it ends at seq ${figures.lastSeq}, before the backup's ${base.point.last_seq}`);
      if (tail.anchor !== base.point.global_head) throw notThis(`its global hash at seq ${base.point.last_seq} is ${tail.anchor ?? 'none'}, the backup's ${base.point.global_head ?? 'none'}`);
      const written = await writeIncrementFile(partial, tail);
      return { point: pointOfFigures(figures), carried: written };
    })
    .catch((error: unknown) => {
      rmSync(partial, { force: true });
      throw error;
    })
    .finally(() => source.close());
  renameSync(partial, file);
  const takenAtMs = wallMs();
  const { copied, warnings } = copyConfigAndKey(env, dir, withKey);
  const files: IncrementManifest['files'] = {};
  for (const role of ['tail', ...copied] as const) {
    const path = join(dir, INCREMENT_FILES[role]);
    files[role] = { name: INCREMENT_FILES[role], sha256: sha256OfFile(path), bytes: statSync(path).size };
  }
  const manifest: IncrementManifest = {
    format: INCREMENT_FORMAT,
    taken_at_ms: takenAtMs,
    point,
    base: {
      dir: relative(dir, since),
      manifest_sha256: baseSha256,
      journal_id: base.point.journal_id,
      entries: base.point.entries,
      last_seq: base.point.last_seq,
      global_head: base.point.global_head,
    },
    carried,
    files,
  };
  writeFileSync(join(dir, MANIFEST_FILE), `${JSON.stringify(manifest, null, 2)}\n`, { mode: BACKUP_FILE_MODE });
  return { dir, manifest, warnings };
}
