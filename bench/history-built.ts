import fs from 'node:fs';
import path from 'node:path';
import { freeBytes, HISTORY_SIZES, type HistorySize, HistoryRefusal } from './history-args.ts';
import type { Site } from './history-server.ts';
import type { Templates } from './journal-gen.ts';
import { startSandboxProcess } from './processes.ts';
import { buildServer } from '../scripts/build-server.ts';

// A data folder whose derived tables are built, kept beside the journals (`<journals>/built-<size>`):
// the database as a server left it after its first start and a clean stop, and the receipt keys it
// wrote beside it. `--after-kill-only` measures the start after a SIGKILL over a copy of it, and
// `--tools-only` the offline tools, where building the tables again would take the first start's
// minutes (about 40 at 10M). The kept folder is only ever read.

/** The files of a kept data folder, named as the server names them in its data folder. */
export const BUILT_FILES = ['interlock.sqlite', 'receipt-signing-key.pem', 'receipt-signing-key.pub.pem'] as const;

/** Free space left beside a kept copy, beyond its own bytes, before one is made. */
const KEEP_MARGIN_BYTES = 5e9;

/** The kept data folder of one size in a journals folder. */
export function builtDataDir(journalsDir: string, size: HistorySize): string {
  return path.join(journalsDir, `built-${size}`);
}

/** Refuse a database whose write-ahead log still holds commits: it was not stopped cleanly. */
function refuseUnclosed(db: string): void {
  const wal = `${db}-wal`;
  if (fs.existsSync(wal) && fs.statSync(wal).size > 0) throw new Error(`${db} was not closed cleanly (its -wal holds commits)`);
}

/** Refuse a kept data folder that is missing, lacks a file or was not closed cleanly. */
export function checkBuiltData(journalsDir: string, size: HistorySize): void {
  const kept = builtDataDir(journalsDir, size);
  const missing = BUILT_FILES.filter((name) => !fs.existsSync(path.join(kept, name)));
  if (missing.length > 0) {
    throw new HistoryRefusal(
      'no_built_data',
      `--after-kill-only and --tools-only need ${kept} with ${BUILT_FILES.join(', ')} (a data folder whose tables a first start built, stopped cleanly); ${missing.join(', ')} missing. A full history run with --journals keeps one there.`,
    );
  }
  refuseUnclosed(path.join(kept, 'interlock.sqlite'));
}

/** Copy the kept data folder of `size` into `dataDir`, once it holds (`checkBuiltData`); the kept one is only read. */
export function copyBuiltData(journalsDir: string, size: HistorySize, dataDir: string): void {
  checkBuiltData(journalsDir, size);
  const kept = builtDataDir(journalsDir, size);
  fs.mkdirSync(dataDir, { recursive: true });
  for (const name of BUILT_FILES) fs.copyFileSync(path.join(kept, name), path.join(dataDir, name));
}

/**
 * Keep a copy of a cleanly stopped server's data folder as `built-<size>` beside the journals, unless
 * one is kept already or the disk lacks room for it: written under a temporary name, renamed whole.
 * Answers what was done, for the stage's log.
 */
export function keepBuiltData(dataDir: string, journalsDir: string, size: HistorySize, free: (dir: string) => number = freeBytes): string {
  const kept = builtDataDir(journalsDir, size);
  if (fs.existsSync(kept)) return `${kept} kept from before`;
  const db = path.join(dataDir, 'interlock.sqlite');
  refuseUnclosed(db);
  const bytes = fs.statSync(db).size;
  if (free(journalsDir) < bytes + KEEP_MARGIN_BYTES) return `${kept} not kept: ${(free(journalsDir) / 1e9).toFixed(1)} GB free for ${(bytes / 1e9).toFixed(1)} GB`;
  const partial = `${kept}.partial`;
  fs.rmSync(partial, { recursive: true, force: true });
  fs.mkdirSync(partial, { recursive: true });
  for (const name of BUILT_FILES) fs.copyFileSync(path.join(dataDir, name), path.join(partial, name));
  fs.renameSync(partial, kept);
  return `${kept} kept for --after-kill-only and --tools-only`;
}

/**
 * `each` over a copy of the kept data folder of every size asked, in ascending order, each copy
 * removed when its size is done; the server compiled first and a sandbox started for the runs.
 */
export async function overBuiltCopies(dir: string, journalsDir: string, sizes: readonly HistorySize[], each: (site: Site, templates: Templates) => Promise<void>): Promise<void> {
  const asked = HISTORY_SIZES.filter((s) => sizes.includes(s));
  for (const size of asked) checkBuiltData(journalsDir, size);
  const templates = JSON.parse(fs.readFileSync(path.join(journalsDir, 'templates.json'), 'utf8')) as Templates;
  await buildServer();
  const sandbox = await startSandboxProcess();
  try {
    for (const size of asked) {
      const dataDir = path.join(dir, `history-${size}`);
      const site: Site = { size, dataDir, db: path.join(dataDir, 'interlock.sqlite'), sandboxUrl: sandbox.url };
      try {
        copyBuiltData(journalsDir, size, dataDir);
        await each(site, templates);
      } finally {
        fs.rmSync(dataDir, { recursive: true, force: true });
      }
    }
  } finally {
    await sandbox.stop();
  }
}
