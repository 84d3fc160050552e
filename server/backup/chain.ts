import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { openJournalCopy } from '../../db/sqlite-journal-copy.ts';
import { CopyTablesError, type TailEntry } from '../../db/port/journal-tail.ts';
import { globalHashOf } from '../journal/hash.ts';
import { readIncrementFile } from './increment-file.ts';
import { type AnyManifest, type IncrementManifest, manifestSha256, readAnyManifest } from './increment-manifest.ts';
import { type BackupManifest, BackupError, type BackupPoint, MANIFEST_FORMAT } from './manifest.ts';

// A restore's chain: the full backup, then each increment in order, each link checked (every
// file's sha256, each increment's base the backup before it, seqs and the global chain
// continuing), and the increments laid on the restore's copy of the full backup's journal.

/** One backup of a chain: its folder and manifest. */
export interface ChainLink<M extends AnyManifest = AnyManifest> {
  dir: string;
  manifest: M;
}

/** A chain, oldest first: the full backup, then its increments. */
export interface BackupChain {
  full: ChainLink<BackupManifest>;
  increments: ChainLink<IncrementManifest>[];
}

/** No chain is longer: a longer one is a loop, or a schedule that never takes a full backup. */
const LINKS_MAX = 10_000;

/**
 * The chain that ends at the backup in `dir`: a full backup is a chain by itself; an increment's
 * base is read from the folder its manifest names (relative to its own), back to a full backup.
 * Refused (BackupError, nothing written) when a link is missing, a file does not match its
 * sha256, or a base is not the backup the increment after it was taken since.
 */
export function readChain(dir: string): BackupChain {
  const increments: ChainLink<IncrementManifest>[] = [];
  let at = dir;
  let manifest: AnyManifest = readAnyManifest(dir);
  while (manifest.format !== MANIFEST_FORMAT) {
    if (increments.length >= LINKS_MAX) throw new BackupError(`the chain ending at ${dir} has more than ${LINKS_MAX} increments: restore from a full backup`);
    const increment = { dir: at, manifest };
    increments.unshift(increment);
    const { base } = increment.manifest;
    const baseDir = resolve(increment.dir, base.dir);
    if (!existsSync(join(baseDir, 'manifest.json'))) {
      throw new BackupError(`the increment ${increment.dir} was taken since the backup in ${baseDir}, which is missing: a chain restores only whole (restore an earlier full backup, or put the missing backup back)`);
    }
    const sha256 = manifestSha256(baseDir);
    if (sha256 !== base.manifest_sha256) {
      throw new BackupError(`the increment ${increment.dir} was not taken since the backup now in ${baseDir} (its manifest's sha256 is ${sha256}, the increment names ${base.manifest_sha256}): the chain was changed or put out of order`);
    }
    manifest = readAnyManifest(baseDir);
    const { point } = manifest;
    if (point.journal_id !== base.journal_id || point.last_seq !== base.last_seq || point.entries !== base.entries || point.global_head !== base.global_head) {
      throw new BackupError(`the backup in ${baseDir} does not end where the increment ${increment.dir} begins`);
    }
    at = baseDir;
  }
  return { full: { dir: at, manifest }, increments };
}

/** The newest link's manifest: where the chain's journal stands and when it was taken. */
export function newestOf(chain: BackupChain): AnyManifest {
  return (chain.increments.at(-1) ?? chain.full).manifest;
}

/**
 * Lay each increment of the chain on `copy` (the full backup's journal, copied), in order: its
 * base's head must be the copy's, each entry must follow the one before it in seq and in the
 * global chain, and the copy must end at the increment's point.
 */
export async function applyIncrements(copy: string, chain: BackupChain): Promise<void> {
  const journal = await openJournalCopy(copy);
  try {
    for (const { dir, manifest } of chain.increments) {
      const file = join(dir, manifest.files.tail?.name ?? '');
      const head = await journal.head();
      const { base, point } = manifest;
      if (head.lastSeq !== base.last_seq || head.globalHead !== base.global_head || head.entries !== base.entries) {
        throw new BackupError(`the increment ${dir} does not begin where the journal before it ends (seq ${head.lastSeq}, not ${base.last_seq})`);
      }
      const contents = await readIncrementFile(file);
      let last = { seq: head.lastSeq, globalHead: head.globalHead };
      let carried = 0;
      for await (const batch of contents.entries) {
        for (const entry of batch) last = followOn(dir, last, entry);
        await journal.appendEntries(batch);
        carried += batch.length;
      }
      if (!endsAt(point, last, base.entries + carried) || carried !== manifest.carried) {
        throw new BackupError(`the increment ${dir} ends at seq ${last.seq} with ${base.entries + carried} entries, not where its manifest says (seq ${point.last_seq}, ${point.entries} entries)`);
      }
      await journal.putTables(contents.tables).catch((error: unknown) => {
        throw error instanceof CopyTablesError ? new BackupError(`the increment ${dir}: ${error.message}`) : error;
      });
      const checkpointId = (await journal.head()).newestCheckpointId;
      if (point.newest_checkpoint_id !== undefined && checkpointId !== point.newest_checkpoint_id) {
        throw new BackupError(`the increment ${dir} leaves the journal with checkpoints to id ${checkpointId}, not ${point.newest_checkpoint_id} as its manifest says`);
      }
    }
  } finally {
    await journal.close();
  }
}

/** The entry after `last`, checked: a later seq, and a seal that follows the global chain's head. */
function followOn(dir: string, last: { seq: number; globalHead: string | null }, entry: TailEntry): { seq: number; globalHead: string } {
  if (entry.seq <= last.seq) throw new BackupError(`the increment ${dir} holds entry seq ${entry.seq} after seq ${last.seq}: out of order`);
  if (globalHashOf(last.globalHead, entry.seq, entry.hash) !== entry.globalHash) {
    throw new BackupError(`the increment ${dir}: entry seq ${entry.seq} does not continue the global chain after seq ${last.seq}`);
  }
  return { seq: entry.seq, globalHead: entry.globalHash };
}

function endsAt(point: BackupPoint, last: { seq: number; globalHead: string | null }, entries: number): boolean {
  return point.last_seq === last.seq && point.global_head === last.globalHead && point.entries === entries;
}
