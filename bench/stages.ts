import fs from 'node:fs';
import path from 'node:path';
import { measureFsyncPerS, measureGlobalChainCost, measureRawRowsPerS } from './fsync.ts';
import type { BurstMode } from './burst-floor.ts';
import type { HistorySize } from './history-args.ts';
import { runGate, runNaive } from './gate.ts';
import { copyJournal, generateJournal, type Templates } from './journal-gen.ts';
import { REPO_ROOT } from './processes.ts';
import { measureColdScoreboard, measureRebuild } from './rebuild.ts';
import { repeat } from './stats.ts';
import { runSeeds } from '../test/sim/simulator.ts';
import { buildReceipts, measureVerifyPerS } from './verify.ts';

/** Sizes and durations of one bench run. */
export interface Plan {
  reps: number;
  fsyncMs: number;
  gateMs: number;
  naiveMs: number;
  submitters: number;
  connections: number;
  warmupMs: number;
  loadMs: number;
  fixedRatePerS: number;
  fixedMs: number;
  fixedInFlightMax: number;
  visibleRequests: number;
  visibleConcurrency: number;
  /** A bound on each run of escalations, however slow the server. */
  visibleMaxMs: number;
  decide: { approve: number; reject: number };
  verifyMs: number;
  smallEntries: number;
  largeEntries: number;
  /** Entries of the history stage's journal of each size (the labels are the full run's sizes). */
  historyEntries: Record<HistorySize, number>;
  /** Old items (and their receipts) read at random after each start-up of the history stage. */
  historyReads: number;
  /** After the history stage's background pass, its reads go on this long with no pass running. */
  passQuietMs: number;
  profileGateMs: number;
  profileLoadMs: number;
  /** How long the server is watched with no requests, after the loads. */
  idleMs: number;
  profileIdleMs: number;
  /** Seeds of the whole-system simulator per repetition. */
  simSeeds: number;
  /** Escalated refunds per repetition of the outbox stage, and the rate they are sent at. */
  notifyItems: number;
  notifyRatePerS: number;
  /** Items refunded by hand per repetition of the stale chip stage, one after another. */
  staleItems: number;
  /** Agents in each burst of the stripe-limits stage, each with a routine refund of a payment of its own, all at once. */
  burstRefunds: Record<BurstMode, number>;
  /** Routine refunds a fresh server is warmed up with before its burst. */
  burstWarmupRefunds: number;
  /** How long the overload stage measures a fresh server's capacity, then floods it at four times that. */
  overloadCapacityMs: number;
  overloadMs: number;
  /** Items a person approves one at a time during each flood. */
  overloadDecisions: number;
  /** A floor on the flood's rate (0 in the full run): the smoke run's tiny capacity loop is too short to load a server. */
  overloadOfferedMinPerS: number;
}

/** The config every server process of the bench runs with: the repository's own. */
export const CONFIG_PATH = path.join(REPO_ROOT, 'interlock.yaml');

/** Samples of named values, one per repetition. */
export type Samples = Record<string, number[]>;

export function push(samples: Samples, values: Record<string, number>): void {
  for (const [name, value] of Object.entries(values)) samples[name] = [...(samples[name] ?? []), value];
}

/** Log progress on stderr: the bench's stdout is its report. */
export function say(message: string): void {
  process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${message}\n`);
}

export async function fsyncStage(plan: Plan, dir: string): Promise<Samples> {
  const samples: Samples = {};
  await repeat(plan.reps, async () => {
    const fsyncPerS = measureFsyncPerS(dir, plan.fsyncMs);
    const raw = measureRawRowsPerS(dir, plan.fsyncMs);
    const chain = measureGlobalChainCost(dir, 2 * plan.fsyncMs);
    push(samples, { fsync_per_s: fsyncPerS, journal_rows_per_s_raw: raw, journal_rows_per_s_raw_sealed: chain.sealedRowsPerS, global_chain_us_per_entry: chain.usPerEntry });
  });
  return samples;
}

export async function gateStage(plan: Plan, dir: string): Promise<Samples> {
  const samples: Samples = {};
  await repeat(plan.reps, async (rep) => {
    const run = await runGate(dir, { durationMs: plan.gateMs, submitters: plan.submitters, tag: `r${rep}` });
    say(`gate rep ${rep}: ${Math.round(run.effectsPerS)} effects/s, p99 ${run.p99Ms.toFixed(1)} ms, ${run.writesPerBatch.toFixed(1)} writes per batch`);
    push(samples, {
      gate_effects_per_s: run.effectsPerS,
      gate_p99_ms: run.p99Ms,
      gate_p50_ms: run.p50Ms,
      gate_cpu_us_per_effect: run.cpuUsPerEffect,
      gate_writes_per_commit: run.writesPerBatch,
      gate_commits_per_s: run.batches / (plan.gateMs / 1000),
    });
    fs.rmSync(path.join(dir, `gate-r${rep}.sqlite`), { force: true });
  });
  await repeat(plan.reps, async (rep) => push(samples, { naive_effects_per_s: await runNaive({ durationMs: plan.naiveMs, submitters: plan.submitters, tag: `r${rep}` }) }));
  return samples;
}

/** Seeds per second of the whole-system simulator (`npm run simulate`), one process, no I/O but the clock. */
export async function simulateStage(plan: Plan): Promise<Samples> {
  const samples: Samples = {};
  await repeat(plan.reps, async () => {
    const summary = await runSeeds(1, plan.simSeeds, { print: () => {} });
    if (summary.violations > 0) throw new Error(`the simulator found ${summary.violations} violations`);
    push(samples, { sim_seeds_per_s: summary.seeds / summary.seconds });
  });
  return samples;
}

export async function verifyStage(plan: Plan, dir: string, templates: Templates): Promise<Samples> {
  const samples: Samples = {};
  const { receipts, keys } = buildReceipts(templates, path.join(dir, 'keys'));
  await repeat(plan.reps, async () => push(samples, { verify_receipts_per_s: await measureVerifyPerS(receipts, keys, plan.verifyMs) }));
  return samples;
}

const fileMib = (file: string) => fs.statSync(file).size / 1024 / 1024;

/** The generated journals: `small` and `large` entries of copies of the templates. */
export async function generateJournals(plan: Plan, dir: string, templates: Templates): Promise<{ small: string; large: string; samples: Samples }> {
  const small = path.join(dir, 'journal-small.sqlite');
  const large = path.join(dir, 'journal-large.sqlite');
  const startMs = Date.now();
  const nextChain = await generateJournal(small, templates, plan.smallEntries);
  copyJournal(small, large);
  await generateJournal(large, templates, plan.largeEntries, nextChain);
  const seconds = (Date.now() - startMs) / 1000;
  say(`journals: ${fileMib(small).toFixed(0)} MiB and ${fileMib(large).toFixed(0)} MiB generated in ${seconds.toFixed(0)} s`);
  return { small, large, samples: { journal_file_mib_1m: [fileMib(large)], journal_generate_s_1m: [seconds] } };
}

/** The data folder of the start-ups of the rebuild stage: the key the journals' checkpoints are signed with is there. */
export function rebuildDataDir(dir: string): string {
  return path.join(dir, 'rebuild-data');
}

export async function rebuildStage(plan: Plan, dir: string, journals: { small: string; large: string }): Promise<Samples> {
  const samples: Samples = {};
  const dataDir = rebuildDataDir(dir);
  fs.mkdirSync(dataDir, { recursive: true });
  // One start-up of each journal first, not timed: it signs the journal's first checkpoint, so
  // every timed start-up holds its journal against one, as a server's own journal would be.
  for (const journal of [journals.small, journals.large]) await measureRebuild(journal, CONFIG_PATH, dataDir);
  await repeat(plan.reps, async (rep) => {
    const small = await measureRebuild(journals.small, CONFIG_PATH, dataDir);
    const large = await measureRebuild(journals.large, CONFIG_PATH, dataDir);
    const cold = await measureColdScoreboard(journals.large, CONFIG_PATH);
    say(`rebuild rep ${rep}: ${small.rebuild_s!.toFixed(1)} s (${small.entries} entries), ${large.rebuild_s!.toFixed(1)} s (${large.entries} entries; integrity ${large.integrity_s!.toFixed(2)} s, checkpoint ${large.checkpoint_sign_ms!.toFixed(1)} ms), peak rss ${large.peak_rss_mib!.toFixed(0)} MiB; scoreboard cold ${cold.cold_ms!.toFixed(0)} ms, warm ${large.warm_board_ms!.toFixed(2)} ms`);
    push(samples, {
      rebuild_s_100k: small.rebuild_s!,
      rebuild_s_1m: large.rebuild_s!,
      rebuild_peak_rss_mib_1m: large.peak_rss_mib!,
      scoreboard_ms_1m_cold: cold.cold_ms!,
      scoreboard_ms_1m_warm: large.warm_board_ms!,
      start_up_integrity_s_1m: large.integrity_s!,
      checkpoint_sign_ms: large.checkpoint_sign_ms!,
      // One checkpoint every checkpoint_every_entries entries: its cost spread over them, in µs.
      checkpoint_us_per_entry: (large.checkpoint_sign_ms! * 1000) / large.checkpoint_every_entries!,
      rebuild_s_1m_without_integrity: large.rebuild_s! - large.integrity_s!,
      rebuild_build_s_1m: large.build_s!,
      rebuild_check_s_1m: large.check_s!,
      rebuild_check_outside_replay_s_1m: large.check_outside_replay_s!,
      rebuild_global_chain_s_1m: large.global_chain_s!,
      checkpoint_hold_ms_1m: large.checkpoint_hold_ms!,
      rebuild_replay_s_1m: large.replay_s!,
      rebuild_sweeps_s_1m: large.start_rest_s!,
      rebuild_open_s_1m: large.open_s!,
      rss_ready_mib_1m: large.rss_ready_mib!,
      scoreboard_first_read_ms_1m: large.first_board_ms!,
      scoreboard_load_ms_1m: cold.load_ms!,
    });
  });
  return samples;
}
