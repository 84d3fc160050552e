import fs from 'node:fs';
import path from 'node:path';
import { HISTORY_SIZES, type HistoryArgs, type HistorySize, } from './history-args.ts';
import { keepBuiltData, overBuiltCopies } from './history-built.ts';
import { afterKills, afterKillsOnly } from './history-kills.ts';
import { type Site, start, stopCleanly, timedStart } from './history-server.ts';
import { ensureJournals, entriesIn, } from './history-journals.ts';
import { measurePass } from './history-pass.ts';
import { peakRssMib, randomRequests, readAsPerson } from './history-reads.ts';
import { bytesUnder, journalBytes, runTool } from './history-tools.ts';
import type { Templates } from './journal-gen.ts';
import { copyJournal } from './journal-gen.ts';
import { downloadCsv, login } from './ledger.ts';
import { startSandboxProcess, } from './processes.ts';
import { CONFIG_PATH, type Plan, push, type Samples, say } from './stages.ts';
import { repeat } from './stats.ts';
import { buildServer } from '../scripts/build-server.ts';

/** The ledger CSV's figure at 1M belongs to the ledger stage, which measures it over the same journal. */
const CSV_SIZES: readonly HistorySize[] = ['100k', '10m'];
/**
 * At 10M entries the offline tools take many minutes each: verify and backup run once there (their
 * figures are one run's, not a median of three), three times at the other sizes.
 */
const TOOL_REPS: Partial<Record<HistorySize, number>> = { '10m': 1 };
/**
 * `npm run rebuild-views` does what the first start over a journal without tables does (every
 * entry folded into the tables), which `first_start_s_<size>` times at every size; at 10M, where
 * either takes about half an hour, and at 1M (3 to 4 minutes), the stage times the first start only.
 */

const REBUILD_CLI_SIZES: readonly HistorySize[] = ['100k'];

/** Figures not measured, by name, and why: the stage's other figures stand. */
export type Failures = Record<string, string>;

/** Per repetition: a start after a clean stop, a person's first look and old reads, the peak RSS, the CSV's growth. */
async function startUps(plan: Plan, site: Site, samples: Samples, failures: Failures): Promise<void> {
  const old = randomRequests(site.db, plan.historyReads);
  const { size } = site;
  await repeat(plan.reps, async (rep) => {
    const { seconds, server } = await timedStart(site);
    try {
      const pid = server.child.pid!;
      const cookie = await login(server.url);
      const pages = await readAsPerson(server.url, cookie, old);
      const rss = peakRssMib(pid);
      const values: Record<string, number> = {
        [`start_up_s_${size}`]: seconds,
        [`rss_mib_${size}`]: rss,
        [`inbox_first_page_ms_${size}`]: pages.inboxMs,
        [`scoreboard_first_page_ms_${size}`]: pages.scoreboardMs,
        [`ledger_first_page_ms_${size}`]: pages.ledgerMs,
      };
      let csv = '';
      if (CSV_SIZES.includes(size)) {
        // A failed download loses this figure only: the start-up's are measured already.
        try {
          const run = await downloadCsv(server.url, cookie, pid);
          values[`ledger_csv_rss_growth_mib_${size}`] = run.peakMib - run.baselineMib;
          csv = `; csv ${run.rows} rows, rss +${(run.peakMib - run.baselineMib).toFixed(1)} MiB`;
        } catch (error) {
          const why = `the ledger CSV failed: ${(error as Error).message.split('\n')[0]}`;
          failures[`ledger_csv_rss_growth_mib_${size}`] = why;
          csv = `; ${why}`;
        }
      }
      say(
        `history ${size} rep ${rep}: ready in ${seconds.toFixed(2)} s; first pages inbox ${pages.inboxMs.toFixed(0)} ms, scoreboard ${pages.scoreboardMs.toFixed(0)} ms, ledger ${pages.ledgerMs.toFixed(0)} ms; ${pages.itemsRead} old requests and receipts (${pages.notFound} without one), ${pages.itemPages} item pages; peak rss ${rss.toFixed(0)} MiB${csv}`,
      );
      push(samples, values);
    } finally {
      await stopCleanly(server);
    }
  });
}

/**
 * A tool's run, or null with its figures named in `failures` when it failed: the other tools'
 * figures, and the stage's, stand (a verify killed out of heap at 10M once lost them all).
 */
async function toolRun(run: () => Promise<{ seconds: number }>, figures: readonly string[], failures: Failures): Promise<{ seconds: number } | null> {
  try {
    return await run();
  } catch (error) {
    const why = (error as Error).message.split('\n')[0] ?? 'failed';
    for (const figure of figures) failures[figure] = why;
    return null;
  }
}

/** The offline tools over the stopped server's journal: verify, backup, rebuild-views. */
async function tools(plan: Plan, site: Site, samples: Samples, failures: Failures): Promise<void> {
  const entries = entriesIn(site.db);
  const env = { DATA_DIR: site.dataDir, INTERLOCK_CONFIG: CONFIG_PATH };
  const { size } = site;
  await repeat(Math.min(plan.reps, TOOL_REPS[size] ?? plan.reps), async (rep) => {
    const verify = await toolRun(() => runTool('server/receipts/verify-cli.ts', ['--journal', site.db], env), [`verify_journal_s_${size}`, `verify_journal_entries_per_s_${size}`], failures);
    const backupDir = path.join(path.dirname(site.dataDir), `backup-${size}`);
    const backup = await toolRun(() => runTool('server/backup/backup-cli.ts', ['backup', backupDir], env), [`backup_s_${size}`, `backup_bytes_${size}`], failures);
    const backupBytes = bytesUnder(backupDir);
    fs.rmSync(backupDir, { recursive: true, force: true });
    const rebuild = REBUILD_CLI_SIZES.includes(size) ? await toolRun(() => runTool('server/views/rebuild-cli.ts', ['--db', site.db], env), [`rebuild_views_s_${size}`], failures) : null;
    const told = (name: string, run: { seconds: number } | null, more = '') => (run === null ? `${name} failed` : `${name} ${run.seconds.toFixed(1)} s${more}`);
    const rebuilt = REBUILD_CLI_SIZES.includes(size) ? told('rebuild-views', rebuild) : 'rebuild-views not run (the first start timed it)';
    say(`history ${size} rep ${rep}: ${told('verify', verify, verify === null ? '' : ` (${Math.round(entries / verify.seconds)} entries/s)`)}, ${told('backup', backup, ` (${(backupBytes / 1e6).toFixed(0)} MB)`)}, ${rebuilt}`);
    push(samples, {
      ...(verify === null ? {} : { [`verify_journal_s_${size}`]: verify.seconds, [`verify_journal_entries_per_s_${size}`]: entries / verify.seconds }),
      ...(backup === null ? {} : { [`backup_s_${size}`]: backup.seconds, [`backup_bytes_${size}`]: backupBytes }),
      ...(rebuild === null ? {} : { [`rebuild_views_s_${size}`]: rebuild.seconds }),
    });
  });
}

/**
 * `--tools-only`: the offline tools alone at each size asked (verify, backup, and rebuild-views where
 * the stage runs it), over a copy of the data folder kept with its tables built, as a stopped server
 * leaves it; nothing else is measured, no journal is read or generated.
 */
async function toolsOnly(plan: Plan, dir: string, journalsDir: string, sizes: readonly HistorySize[]): Promise<{ samples: Samples; failures: Failures }> {
  const samples: Samples = {};
  const failures: Failures = {};
  await overBuiltCopies(dir, journalsDir, sizes, (site) => tools(plan, site, samples, failures));
  return { samples, failures };
}

/**
 * The sizes whose whole background pass is timed. A pass works at its own pace (a quarter of a core
 * at most): 198 s over the 100k journal, so about half an hour at 1M and five hours at 10M, longer
 * than the stage can wait. It is timed at 100k, and grows with the entries it reads.
 */
const PASS_SIZES: readonly HistorySize[] = ['100k'];

/**
 * One background pass over the whole journal, from a fresh start (the shipped config starts one
 * once the server is ready), and the p99 of finance's reads while it ran and in the minute after (`plan.passQuietMs`).
 * Once per size of PASS_SIZES.
 */
async function backgroundPass(plan: Plan, site: Site, samples: Samples): Promise<void> {
  const old = randomRequests(site.db, 1_000);
  const server = await start(site);
  try {
    const pass = await measurePass(server, old, plan.passQuietMs);
    say(
      `history ${site.size}: background pass ${pass.passS.toFixed(1)} s; reads p99 ${pass.duringP99Ms.toFixed(1)} ms during it (${pass.duringReads}), ${pass.afterP99Ms.toFixed(1)} ms after (${pass.afterReads})`,
    );
    push(samples, {
      [`background_pass_s_${site.size}`]: pass.passS,
      [`pass_reads_p99_ms_${site.size}`]: pass.duringP99Ms,
      [`quiet_reads_p99_ms_${site.size}`]: pass.afterP99Ms,
    });
  } finally {
    await stopCleanly(server);
  }
}

/**
 * Every figure of one size, over a copy of its journal in the run's folder; the copy is removed
 * after. With `keepIn` (the journals folder), the data folder as the first start built it is kept
 * there for `--after-kill-only` (bench/history-built.ts), unless one is.
 */
async function measureSize(plan: Plan, dir: string, size: HistorySize, journal: string, templates: Templates, sandboxUrl: string, failures: Failures, keepIn: string | null): Promise<Samples> {
  const samples: Samples = {};
  const dataDir = path.join(dir, `history-${size}`);
  fs.mkdirSync(dataDir, { recursive: true });
  const site: Site = { size, dataDir, db: path.join(dataDir, 'interlock.sqlite'), sandboxUrl };
  try {
    copyJournal(journal, site.db);
    push(samples, { [`journal_bytes_${size}`]: journalBytes(site.db) });
    // The first start builds the derived tables from every entry (and signs the journal's first
    // checkpoint), as a start after an upgrade to a new views version does.
    const first = await timedStart(site);
    say(`history ${size}: first start (tables built) in ${first.seconds.toFixed(1)} s`);
    push(samples, { [`first_start_s_${size}`]: first.seconds });
    await stopCleanly(first.server);
    if (keepIn !== null) say(`history ${size}: ${keepBuiltData(dataDir, keepIn, size)}`);
    await startUps(plan, site, samples, failures);
    await tools(plan, site, samples, failures);
    await afterKills(plan, site, templates, samples);
    if (PASS_SIZES.includes(size)) await backgroundPass(plan, site, samples);
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
  return samples;
}

/** A server over an empty data folder: the same first look, no history to read. */
async function emptyServer(plan: Plan, dir: string, sandboxUrl: string, samples: Samples): Promise<void> {
  const dataDir = path.join(dir, 'history-empty');
  fs.mkdirSync(dataDir, { recursive: true });
  const site: Site = { size: '100k', dataDir, db: path.join(dataDir, 'interlock.sqlite'), sandboxUrl };
  try {
    await repeat(plan.reps, async () => {
      const server = await start(site);
      try {
        await readAsPerson(server.url, await login(server.url), []);
        push(samples, { rss_mib_empty: peakRssMib(server.child.pid!) });
      } finally {
        await stopCleanly(server);
      }
    });
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

/** Figures made of two sizes' figures, repetition by repetition: how start-up and memory grow with history. */
function growth(samples: Samples, sizes: readonly HistorySize[]): void {
  const small = '100k';
  for (const large of sizes.includes(small) ? sizes.filter((s) => s !== small) : []) {
    const pairs = (name: string) => (samples[`${name}_${small}`] ?? []).map((a, i) => [a, samples[`${name}_${large}`]?.[i]] as const).filter(([, b]) => b !== undefined);
    samples[`rss_growth_${large}_over_${small}`] = pairs('rss_mib').map(([a, b]) => b! / a);
    samples[`start_up_s_${large}_minus_${small}`] = pairs('start_up_s').map(([a, b]) => b! - a);
  }
  const largest = sizes.at(-1);
  if (largest !== undefined) samples.verify_journal_entries_per_s = samples[`verify_journal_entries_per_s_${largest}`] ?? [];
}

/**
 * The history stage: start-up, memory, first pages and the operators' tools over generated
 * journals of realistic chains at each size asked (100k, 1M, 10M). Journals are reused from
 * `--journals <dir>` (any missing is generated there and kept) or generated in the run's folder.
 */
export async function historyStage(plan: Plan, dir: string, args: HistoryArgs): Promise<{ samples: Samples; failures: Failures }> {
  if (args.afterKillOnly && args.journals !== null) return { samples: await afterKillsOnly(plan, dir, args.journals, args.sizes), failures: {} };
  if (args.toolsOnly && args.journals !== null) return toolsOnly(plan, dir, args.journals, args.sizes);
  const samples: Samples = {};
  const failures: Failures = {};
  const journalsDir = args.journals ?? path.join(dir, 'history-journals');
  const journals = await ensureJournals(journalsDir, args.sizes, plan.historyEntries);
  if (journals.generateSPerMillion !== null) {
    say(`history: generation took ${journals.generateSPerMillion.toFixed(0)} s per million entries`);
    samples.journal_generate_s_per_million = [journals.generateSPerMillion];
  }
  // Started as production starts it: tsx compiling the TypeScript at each start would add its
  // own seconds to every start-up timed.
  await buildServer();
  const sandbox = await startSandboxProcess();
  try {
    await emptyServer(plan, dir, sandbox.url, samples);
    for (const size of HISTORY_SIZES.filter((s) => args.sizes.includes(s))) {
      const more = await measureSize(plan, dir, size, journals.files[size]!, journals.templates, sandbox.url, failures, args.journals);
      for (const [name, values] of Object.entries(more)) samples[name] = [...(samples[name] ?? []), ...values];
    }
  } finally {
    await sandbox.stop();
    if (args.journals === null) fs.rmSync(journalsDir, { recursive: true, force: true });
  }
  growth(samples, HISTORY_SIZES.filter((s) => args.sizes.includes(s)));
  return { samples, failures };
}
