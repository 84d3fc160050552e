import fs from 'node:fs';
import path from 'node:path';
import { openDatabase } from '../db/open.ts';
import { checkRoomFor, freeBytes, HISTORY_ENTRIES, HISTORY_SIZES, type HistorySize } from './history-args.ts';
import { httpStage } from './http-stage.ts';
import { copyJournal, generateJournal, type Templates } from './journal-gen.ts';
import { SMOKE } from './plans.ts';
import { say } from './stages.ts';

/** The journal of one size in a journals folder. */
export function journalFile(dir: string, size: HistorySize): string {
  return path.join(dir, `journal-${size}.sqlite`);
}

/** Entries a journal file holds. */
export function entriesIn(file: string): number {
  const opened = openDatabase(file);
  try {
    return opened.sqlite.prepare('SELECT count(*) FROM entries').pluck().get() as number;
  } finally {
    opened.close();
  }
}

/**
 * Append copies of the templates to `file` until it holds `entries`. Chains are numbered from the
 * entries it already holds: every chain has at least one entry, so no request id is used twice.
 */
export async function extendJournal(file: string, templates: Templates, entries: number): Promise<void> {
  await generateJournal(file, templates, entries, entriesIn(file));
}

/** The templates kept in `dir`, or harvested from a short HTTP run against a real server and kept there. */
async function templatesIn(dir: string): Promise<Templates> {
  const file = path.join(dir, 'templates.json');
  if (fs.existsSync(file)) return JSON.parse(fs.readFileSync(file, 'utf8')) as Templates;
  const work = fs.mkdtempSync(path.join(dir, 'work-'));
  try {
    const { templates } = await httpStage(SMOKE, work);
    fs.writeFileSync(file, JSON.stringify(templates));
    return templates;
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}

/** The journals of `sizes` in `dir`, and how long generating took per million entries (null when none was generated). */
export interface Journals {
  files: Partial<Record<HistorySize, string>>;
  templates: Templates;
  generateSPerMillion: number | null;
}

/**
 * The journals of `sizes` in `dir`, each generated there when missing: from a copy of the largest
 * smaller one already there, else from nothing. A journal is written under a temporary name and
 * renamed when whole, so an interrupted run leaves no short journal behind. A 10M-entry journal
 * is refused when `dir` has less than 25 GB free, before any journal is generated.
 */
export async function ensureJournals(
  dir: string,
  sizes: readonly HistorySize[],
  entriesOf: Record<HistorySize, number> = HISTORY_ENTRIES,
  free: (dir: string) => number = freeBytes,
): Promise<Journals> {
  fs.mkdirSync(dir, { recursive: true });
  const templates = await templatesIn(dir);
  const files: Partial<Record<HistorySize, string>> = {};
  let generatedEntries = 0;
  let generatedMs = 0;
  const asked = HISTORY_SIZES.filter((s) => sizes.includes(s));
  // Refused before anything is generated, not after the smaller journals took their minutes.
  for (const size of asked) if (!fs.existsSync(journalFile(dir, size))) checkRoomFor(entriesOf[size], dir, free);
  for (const size of asked) {
    const file = journalFile(dir, size);
    files[size] = file;
    if (fs.existsSync(file)) {
      // A journal kept from before waiting items were bounded has them decided now, once.
      await generateJournal(file, templates, 0);
      continue;
    }
    const partial = `${file}.partial`;
    fs.rmSync(partial, { force: true });
    const from = HISTORY_SIZES.slice(0, HISTORY_SIZES.indexOf(size))
      .reverse()
      .map((s) => journalFile(dir, s))
      .find((f) => fs.existsSync(f));
    if (from !== undefined) copyJournal(from, partial);
    const before = from === undefined ? 0 : entriesIn(partial);
    const startMs = Date.now();
    await extendJournal(partial, templates, entriesOf[size]);
    const ms = Date.now() - startMs;
    fs.renameSync(partial, file);
    generatedEntries += entriesOf[size] - before;
    generatedMs += ms;
    say(`history: generated ${file} (${(entriesOf[size] - before).toLocaleString('en-US')} entries added in ${(ms / 1000).toFixed(0)} s)`);
  }
  return { files, templates, generateSPerMillion: generatedEntries === 0 ? null : generatedMs / 1000 / (generatedEntries / 1e6) };
}
