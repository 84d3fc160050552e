import fs from 'node:fs';

/** The journal sizes the history stage measures, by the label its figures carry. */
export const HISTORY_SIZES = ['100k', '1m', '10m'] as const;
export type HistorySize = (typeof HISTORY_SIZES)[number];

/** Entries of each size's journal in a full run. */
export const HISTORY_ENTRIES: Record<HistorySize, number> = { '100k': 100_000, '1m': 1_000_000, '10m': 10_000_000 };

/** The derived tables' last batch is at most this many entries behind the journal when a server is killed. */
export const KILL_BEHIND_ENTRIES = 10_000;

/** Free space a 10M-entry journal needs before it is generated: the journal, a working copy and a backup of it. */
export const FREE_BYTES_FOR_10M = 25e9;

/** What the history stage was asked to run. */
export interface HistoryArgs {
  sizes: HistorySize[];
  /** The folder journals are reused from and generated into, kept after the run; null for the run's own folder. */
  journals: string | null;
  /**
   * `--after-kill-only`: the start after a SIGKILL alone (`start_up_after_kill_s_<size>`), over a
   * copy of the data folder kept with its tables built beside the journals (bench/history-built.ts).
   */
  afterKillOnly: boolean;
  /**
   * `--tools-only`: the offline tools alone (verify, backup, and rebuild-views where the stage runs
   * it), over a copy of the same kept data folder, its derived tables in it as a server leaves them.
   */
  toolsOnly: boolean;
}

/** A refusal of the history stage, with a stable code. */
export class HistoryRefusal extends Error {
  constructor(
    readonly code: 'bad_sizes' | 'not_enough_space' | 'no_built_data' | 'one_only',
    message: string,
  ) {
    super(message);
  }
}

/** `--sizes 100k,1m` (every size when absent), `--journals <dir>`, `--after-kill-only` and `--tools-only` from the bench's arguments. */
export function parseHistoryArgs(argv: readonly string[]): HistoryArgs {
  const at = argv.indexOf('--sizes');
  let sizes: HistorySize[] = [...HISTORY_SIZES];
  if (at !== -1) {
    const given = (argv[at + 1] ?? '').split(',').filter((s) => s !== '');
    const unknown = given.filter((s) => !(HISTORY_SIZES as readonly string[]).includes(s));
    if (given.length === 0 || unknown.length > 0) {
      throw new HistoryRefusal('bad_sizes', `--sizes takes a comma-separated list of ${HISTORY_SIZES.join(', ')}, not ${JSON.stringify(argv[at + 1] ?? '')}`);
    }
    sizes = HISTORY_SIZES.filter((s) => given.includes(s));
  }
  const journalsAt = argv.indexOf('--journals');
  const journals = journalsAt === -1 ? null : (argv[journalsAt + 1] ?? null);
  const afterKillOnly = argv.includes('--after-kill-only');
  const toolsOnly = argv.includes('--tools-only');
  if (afterKillOnly && toolsOnly) throw new HistoryRefusal('one_only', '--after-kill-only and --tools-only each run one part of the stage alone: give one of them');
  for (const [asked, flag] of [[afterKillOnly, '--after-kill-only'], [toolsOnly, '--tools-only']] as const) {
    if (asked && journals === null) {
      throw new HistoryRefusal('no_built_data', `${flag} takes --journals <dir>: the folder that keeps templates.json and a data folder built-<size> per size, its tables built`);
    }
  }
  return { sizes, journals, afterKillOnly, toolsOnly };
}

/** Free bytes on the file system holding `dir`. */
export function freeBytes(dir: string): number {
  const stats = fs.statfsSync(dir);
  return stats.bavail * stats.bsize;
}

/** Refuse to generate a journal of `entries` into `dir` when a 10M-entry one would not fit. */
export function checkRoomFor(entries: number, dir: string, free: (dir: string) => number = freeBytes): void {
  if (entries < HISTORY_ENTRIES['10m']) return;
  const available = free(dir);
  if (available < FREE_BYTES_FOR_10M) {
    throw new HistoryRefusal(
      'not_enough_space',
      `refused to generate a ${entries.toLocaleString('en-US')}-entry journal in ${dir}: ${(available / 1e9).toFixed(1)} GB free, ${FREE_BYTES_FOR_10M / 1e9} GB needed (the journal, a working copy and a backup); free space there, or run --sizes 100k,1m`,
    );
  }
}
