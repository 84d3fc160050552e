// `npm run bench`: every figure of results/bench.md, from one run on this machine.
// `npm run bench -- --smoke`: the same code paths at tiny sizes in seconds; prints the report, writes nothing.
// `npm run bench -- --only <stage>` (with or without --smoke): that stage alone; prints what it measured, writes nothing.
// `npm run bench -- --only rebuild --journals <dir>`: the start-up stage alone, over copies of the journals
//   `tsx bench/journals.ts <dir>` generated and kept there (journal-small.sqlite, journal-large.sqlite).
// `npm run bench -- --only <stage> --record` (with --journals for rebuild): that stage alone, and its figures
//   recorded over results/bench.json's, the stage run named in results/bench.md with its own time and load.
// `npm run bench -- --only history [--sizes 100k,1m] [--journals <dir>]`: start-up and memory over journals of
//   100k, 1M and 10M entries (every size unless --sizes), reused from <dir> and any missing generated there.
// `npm run bench -- --only history --after-kill-only --sizes 10m --journals <dir>`: the start after a SIGKILL
//   alone, over a copy of <dir>/built-<size> (a data folder whose tables are built), not building them again.
// `npm run bench -- --only history --tools-only --sizes 10m --journals <dir>`: the offline tools alone (verify,
//   backup), over a copy of <dir>/built-<size>.
// `npm run bench -- --only postgres [--sizes 100k,1m]`: Interlock on a PostgreSQL 15 cluster of the stage's own (fsync on),
//   one and two servers on one database, and start-up and memory over journals of 100k entries (and 1M when asked).
// `npm run bench -- --render`: measures nothing; writes results/bench.md again from results/bench.json (after the page's layout or list of figures changed).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BURST_MODES, describeFloor } from './burst-floor.ts';
import { DETAIL_INFO, HEADLINE_INFO, HISTORY_FIGURES } from './figures.ts';
import { HistoryRefusal, parseHistoryArgs } from './history-args.ts';
import { historyStage } from './history.ts';
import { httpStage, profileIdleServer, profileServer } from './http-stage.ts';
import { copyJournal, type Templates } from './journal-gen.ts';
import { STATIC_NOTES } from './notes.ts';
import { staleChipStage } from './stale-chip.ts';
import { stripeLimitsStage } from './stripe-limits.ts';
import { PG_FIGURES } from './pg-figures.ts';
import { postgresStage } from './pg-stage.ts';
import { ledgerStage } from './ledger.ts';
import { outboxStage } from './outbox.ts';
import { overloadStage } from './overload.ts';
import { profileIn, summarizeProfile } from './profile.ts';
import { REPO_ROOT } from './processes.ts';
import { runRebuildChild } from './rebuild.ts';
import {
  BENCH_JSON,
  BENCH_MD,
  type BenchReport,
  DETAIL_TARGETS,
  FIGURE_NAMES,
  type Figure,
  figureOf,
  type ProfileSummary,
  recordStageRun,
  renderBenchMarkdown,
  TARGETS,
} from './report.ts';
import { FULL, SMOKE } from './plans.ts';
import {
  CONFIG_PATH,
  fsyncStage,
  gateStage,
  generateJournals,
  rebuildDataDir,
  rebuildStage,
  type Samples,
  say,
  simulateStage,
  verifyStage,
} from './stages.ts';

if (process.argv.includes('--render')) {
  fs.writeFileSync(BENCH_MD, renderBenchMarkdown(JSON.parse(fs.readFileSync(BENCH_JSON, 'utf8')) as BenchReport));
  say(`wrote ${path.relative(REPO_ROOT, BENCH_MD)} from ${path.relative(REPO_ROOT, BENCH_JSON)}`);
  process.exit(0);
}

const smoke = process.argv.includes('--smoke');
const record = process.argv.includes('--record');
const plan = smoke ? SMOKE : FULL;
/** The stages `--only` can run by themselves: the others need what one of these leaves. */
const ONLY_STAGES = ['fsync', 'simulate', 'gate', 'http-without-limits', 'stripe-limits', 'overload', 'outbox', 'stale-chip', 'rebuild', 'history', 'postgres'] as const;
const only = readOnly();
if (record && (only === null || smoke)) {
  process.stderr.write('--record takes --only <stage> and a full-size run (not --smoke)\n');
  process.exit(2);
}
const keptJournals = readKeptJournals();
const historyArgs = readHistoryArgs();
const samples: Samples = {};
const errors = new Map<string, string>();
const profiles: ProfileSummary[] = [];

/** The stage named by `--only <stage>`, or null; a name it cannot run alone stops the run. */
function readOnly(): string | null {
  const at = process.argv.indexOf('--only');
  if (at === -1) return null;
  const name = process.argv[at + 1];
  if (name === undefined || !(ONLY_STAGES as readonly string[]).includes(name)) {
    process.stderr.write(`--only takes one of ${ONLY_STAGES.join(', ')}, not ${name === undefined ? 'nothing' : JSON.stringify(name)}\n`);
    process.exit(2);
  }
  return name;
}

/** The folder of `--journals <dir>`, which `--only rebuild` needs and `--only history` may take; nothing else takes it. */
function readKeptJournals(): string | null {
  const at = process.argv.indexOf('--journals');
  const dir = at === -1 ? undefined : process.argv[at + 1];
  if (only === 'history') return null;
  if (only === 'postgres' && dir === undefined) return null;
  if ((only === 'rebuild') !== (dir !== undefined)) {
    process.stderr.write('--only rebuild takes --journals <dir> (made by tsx bench/journals.ts <dir>), and only it and --only history do\n');
    process.exit(2);
  }
  return dir ?? null;
}

/** The history stage's sizes and journals folder (`--sizes`, and `--journals` with `--only history`). */
function readHistoryArgs(): ReturnType<typeof parseHistoryArgs> {
  try {
    const args = parseHistoryArgs(process.argv);
    if (only !== 'history' && (args.journals !== null || process.argv.includes('--sizes'))) {
      if (process.argv.includes('--sizes') && only !== 'postgres') throw new HistoryRefusal('bad_sizes', '--sizes is taken by --only history and --only postgres alone');
      return { ...args, journals: null };
    }
    return args;
  } catch (error) {
    if (!(error instanceof HistoryRefusal)) throw error;
    process.stderr.write(`${error.message}\n`);
    process.exit(2);
  }
}

/** Copies of the kept journals in this run's folder: a start-up appends to its journal. */
function copyKeptJournals(from: string, dir: string): { small: string; large: string } {
  const small = path.join(dir, 'journal-small.sqlite');
  const large = path.join(dir, 'journal-large.sqlite');
  copyJournal(path.join(from, 'journal-small.sqlite'), small);
  copyJournal(path.join(from, 'journal-large.sqlite'), large);
  return { small, large };
}

/** Run a stage (unless `--only` names another); if it fails, the figures it owns are reported as not measured, with why. */
async function stage<T>(name: string, owns: readonly string[], fn: () => Promise<T>): Promise<T | undefined> {
  if (only !== null && name !== only) return undefined;
  say(`${name}: start`);
  try {
    return await fn();
  } catch (error) {
    const why = `${name} failed: ${(error as Error).message.split('\n')[0]}`;
    say(why);
    for (const figure of owns) if (!errors.has(figure)) errors.set(figure, why);
    return undefined;
  }
}

function merge(more: Samples | undefined): void {
  for (const [name, values] of Object.entries(more ?? {})) {
    samples[name] = [...(samples[name] ?? []), ...values];
  }
}

/** Run `fn` with a fresh folder for a V8 profile, then summarise the profile written there. */
async function profiled(dir: string, name: string, workload: string, fn: (profDir: string) => Promise<unknown>): Promise<void> {
  const profDir = fs.mkdtempSync(path.join(dir, 'prof-'));
  await fn(profDir);
  profiles.push(summarizeProfile(profileIn(profDir), name, workload));
}

function runProfiledGate(profDir: string, dir: string): Promise<void> {
  const child = spawn(process.execPath, ['--cpu-prof', '--cpu-prof-dir', profDir, '--import', 'tsx', 'bench/profile-gate.ts', dir, String(plan.profileGateMs)], {
    cwd: REPO_ROOT,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  return new Promise((resolve, reject) => child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`profiled gate exited ${code}`)))));
}

const ALL_FIGURES = [...FIGURE_NAMES, ...Object.keys(DETAIL_INFO)];
const HTTP_FIGURES = ALL_FIGURES.filter((f) => f.startsWith('http_') || f.startsWith('ws_'));
const REBUILD_FIGURES = ALL_FIGURES.filter((f) => /^(rebuild_|rss_|scoreboard_|journal_(file|generate)_|checkpoint_|start_up_)/.test(f) && !HISTORY_FIGURES.includes(f));
const NOTIFY_FIGURES = ALL_FIGURES.filter((f) => f.startsWith('notify_'));
const STALE_FIGURES = ALL_FIGURES.filter((f) => f.startsWith('stale_chip_'));
const LEDGER_FIGURES = ALL_FIGURES.filter((f) => f.startsWith('ledger_csv_'));
const STRIPE_LIMITS_FIGURES = ALL_FIGURES.filter((f) => f === 'stripe_calls_per_refund' || f.startsWith('burst_'));
const OVERLOAD_FIGURES = ALL_FIGURES.filter((f) => f.startsWith('overload_'));

/** The history stage: its samples, and why any figure it could not measure is missing. */
async function runHistory(dir: string): Promise<void> {
  const history = await stage('history', HISTORY_FIGURES, () => historyStage(plan, dir, historyArgs));
  if (!history) return;
  merge(history.samples);
  for (const [name, why] of Object.entries(history.failures)) errors.set(name, why);
}

/** The journal sizes of the postgres stage: 100k, or those `--sizes` names with `--only postgres`. */
const PG_SIZES = only === 'postgres' && process.argv.includes('--sizes') ? historyArgs.sizes : (['100k'] as const);

async function runAll(dir: string): Promise<void> {
  if (only === 'history') {
    await runHistory(dir);
    return;
  }
  if (only === 'postgres') {
    merge(await stage('postgres', PG_FIGURES, () => postgresStage(plan, dir, PG_SIZES)));
    return;
  }
  merge(await stage('fsync', ['fsync_per_s', 'journal_rows_per_s_raw', 'journal_rows_per_s_raw_sealed', 'global_chain_us_per_entry'], () => fsyncStage(plan, dir)));
  if (keptJournals !== null) {
    const from = keptJournals;
    merge(await stage('rebuild', REBUILD_FIGURES, () => rebuildStage(plan, dir, copyKeptJournals(from, dir))));
    return;
  }
  merge(await stage('simulate', [], () => simulateStage(plan)));
  merge(await stage('gate', ALL_FIGURES.filter((f) => f.startsWith('gate_') || f.startsWith('naive_')), () => gateStage(plan, dir)));
  let templates: Templates | undefined;
  const http = await stage('http-without-limits', [...HTTP_FIGURES, 'verify_receipts_per_s', ...REBUILD_FIGURES], () => httpStage(plan, dir));
  if (http) {
    merge(http.samples);
    for (const [name, why] of Object.entries(http.failures)) errors.set(name, why);
    templates = http.templates;
    await stage('profile idle server', [], () =>
      profiled(dir, 'Server with no requests, over the journal the loads left', `A server started over a copy of the journal the HTTP runs left, sent nothing for ${plan.profileIdleMs / 1000} s.`, async (profDir) =>
        merge({ idle_server_cpu_share: [await profileIdleServer(plan, dir, http.journal, profDir)] }),
      ),
    );
  }
  merge(await stage('stripe-limits', STRIPE_LIMITS_FIGURES, () => stripeLimitsStage(plan, dir)));
  merge(await stage('overload', OVERLOAD_FIGURES, () => overloadStage(plan, dir)));
  merge(await stage('outbox', NOTIFY_FIGURES, () => outboxStage(plan, dir)));
  merge(await stage('stale-chip', STALE_FIGURES, () => staleChipStage(plan, dir)));
  merge(await stage('postgres', PG_FIGURES, () => postgresStage(plan, dir, PG_SIZES)));
  if (templates) {
    const found = templates;
    merge(await stage('verify', ['verify_receipts_per_s'], () => verifyStage(plan, dir, found)));
    const journals = await stage('generate journals', REBUILD_FIGURES, () => generateJournals(plan, dir, found));
    if (journals) {
      merge(journals.samples);
      merge(await stage('rebuild', REBUILD_FIGURES, () => rebuildStage(plan, dir, journals)));
      merge(await stage('ledger csv', LEDGER_FIGURES, () => ledgerStage(plan, dir, journals)));
      await stage('profile rebuild', [], () =>
        profiled(dir, 'Start-up over the 100k journal', 'One start-up (replay, recovery, sweeps, first scoreboard read) over the 100k-entry journal.', (profDir) =>
          runRebuildChild(['rebuild', journals.small, CONFIG_PATH, rebuildDataDir(dir)], { cpuProfDir: profDir }),
        ),
      );
    }
  }
  await runHistory(dir);
  await stage('profile gate', [], () =>
    profiled(dir, 'Gate, in process', `The gate run above for ${plan.profileGateMs / 1000} s in a process of its own.`, (profDir) => runProfiledGate(profDir, dir)),
  );
  await stage('profile server', [], () =>
    profiled(dir, 'Server under HTTP load', `The server process during ${plan.profileLoadMs / 1000} s of routine refunds over ${plan.connections} connections.`, (profDir) =>
      profileServer(plan, dir, profDir),
    ),
  );
}

/** Durable journal writes per routine effect through the Gate. */
const WRITES_PER_EFFECT = 4;

/** Notes whose numbers come from this run. */
function measuredNotes(figures: Record<string, Figure>): string[] {
  const at = (name: string) => figures[name]?.median ?? null;
  const notes: string[] = [];
  const fsync = at('fsync_per_s');
  const perCommit = at('gate_writes_per_commit');
  const rawRows = at('journal_rows_per_s_raw');
  const gate = at('gate_effects_per_s');
  if (fsync !== null && perCommit !== null && rawRows !== null && gate !== null) {
    // A routine effect makes four durable writes one after another (PROPOSED, AUTHORIZED,
    // DISPATCHED with its claim, COMMITTED with the claim's release), and each submitter waits for each.
    const ceiling = rawRows / WRITES_PER_EFFECT;
    notes.push(
      `The gate's bound on this disk: each routine effect is ${WRITES_PER_EFFECT} durable journal writes, and SQLite itself stored ${Math.round(rawRows).toLocaleString('en-US')} journal-shaped rows/s at 64 per commit (journal_rows_per_s_raw, no gate, no hashing), so no gate on this storage exceeds about ${Math.round(ceiling).toLocaleString('en-US')} effects/s here; the gate reached ${Math.round(gate).toLocaleString('en-US')} (${Math.round((100 * gate) / ceiling)}% of that bound) with ${perCommit.toFixed(0)} writes per commit and ${Math.round(at('gate_cpu_us_per_effect') ?? Number.NaN)} µs of CPU per effect. The disk's raw fsync rate (${Math.round(fsync).toLocaleString('en-US')}/s) is not the limit: group commit already shares each fsync among ${perCommit.toFixed(0)} writes; the limit is SQLite's per-row work (the row and its five index entries, three on random keys) and the WAL pages each commit writes. 20,000 effects/s would need ${(20_000 * WRITES_PER_EFFECT).toLocaleString('en-US')} rows/s.`,
    );
  }
  const cpuPerRefund = ['http_server_cpu_ms_per_refund', 'http_sandbox_cpu_ms_per_refund', 'http_loadgen_cpu_ms_per_refund'].map(at);
  if (cpuPerRefund.every((v) => v !== null)) {
    const [server, sandbox, loadgen] = cpuPerRefund as number[];
    const cores = os.cpus().length;
    notes.push(
      `HTTP on ${cores} cores: each routine refund cost ${server!.toFixed(1)} ms of server CPU, ${sandbox!.toFixed(1)} ms of sandbox CPU and ${loadgen!.toFixed(1)} ms of load-generator CPU, so this machine cannot answer more than about ${Math.round((cores * 1000) / (server! + sandbox! + loadgen!))} refunds/s however the server is tuned; 2,000/s needs ≤ ${(1000 / 2_000).toFixed(1)} ms of server CPU per refund on a core of its own.`,
    );
  }
  const fixedRate = at('http_fixed_per_s');
  const fixedFailed = at('http_fixed_failed');
  if (fixedRate !== null && fixedFailed !== null && fixedFailed > 0) {
    notes.push(
      `At a fixed ${plan.fixedRatePerS}/s the server answered ${Math.round(fixedRate)}/s and a median of ${Math.round(fixedFailed)} requests per run failed or were shed beyond ${plan.fixedInFlightMax} in flight: http_p99_ms_at_1000 is the p99 of the answered ones only, so it understates the wait of the rest.`,
    );
  }
  const idle = at('http_server_idle_cpu_share');
  const journalEntries = at('http_server_journal_entries');
  if (idle !== null && journalEntries !== null) {
    notes.push(
      `After a closed-loop run, with no request at all, the server used ${Math.round(100 * idle)}% of a core over the ${Math.round(journalEntries).toLocaleString('en-US')} entries that run left, and its slowest /healthz took ${Math.round(at('http_server_idle_healthz_max_ms') ?? Number.NaN)} ms (a fresh server over a copy of that journal: ${Math.round(100 * (at('idle_server_cpu_share') ?? Number.NaN))}% of a core). Each HTTP run starts on a fresh server with an empty journal, so the runs are comparable.`,
    );
  }
  const settled = BURST_MODES.map((mode) => at(`burst_settle_s_${mode}`));
  if (settled.every((s) => s !== null)) {
    notes.push(
      `The stripe-limits bursts: every agent of a burst sends at once over a connection of its own (client concurrency = agents: ${BURST_MODES.map((mode) => `${plan.burstRefunds[mode].toLocaleString('en-US')} under ${mode}-mode limits`).join(', ')}). Floors: ${BURST_MODES.map((mode) => describeFloor(mode, plan.burstRefunds[mode])).join('; ')}. The bursts settled in ${settled.map((s) => `${s!.toFixed(1)} s`).join(' and ')}.`,
    );
  }
  const replay = at('rebuild_replay_s_1m');
  const sweeps = at('rebuild_sweeps_s_1m');
  const firstRead = at('scoreboard_first_read_ms_1m');
  if (replay !== null && sweeps !== null && firstRead !== null) {
    notes.push(
      `Of the 1M start-up, the replay into the views took ${replay.toFixed(1)} s and recovery plus the inbox sweeps before ready ${sweeps.toFixed(1)} s; the first scoreboard read after it took ${(firstRead / 1000).toFixed(1)} s more.`,
    );
  }
  const rebuild = at('rebuild_s_1m');
  const integrity = at('start_up_integrity_s_1m');
  const outside = at('rebuild_check_outside_replay_s_1m');
  const chain = at('rebuild_global_chain_s_1m');
  if (rebuild !== null && integrity !== null && outside !== null && chain !== null) {
    notes.push(
      `Of the 1M start-up (${rebuild.toFixed(2)} s), the integrity check took ${integrity.toFixed(2)} s: ${outside.toFixed(2)} s of check() outside the replay as it ran (guards, seal check, checkpoint hold, the first checkpoint), and ${chain.toFixed(2)} s recomputing the global chain within the replay (timed again alone after start-up); without it start-up would take about ${(at('rebuild_s_1m_without_integrity') ?? Number.NaN).toFixed(2)} s. A checkpoint costs ${(at('checkpoint_sign_ms') ?? Number.NaN).toFixed(2)} ms, ${(at('checkpoint_us_per_entry') ?? Number.NaN).toFixed(2)} µs per entry at one per 1,000; the seal ${(at('global_chain_us_per_entry') ?? Number.NaN).toFixed(2)} µs per write.`,
    );
  }
  return notes;
}

/** The command that made this report, as a person would type it. */
function commandLine(): string {
  const flags = [
    ...(smoke ? ['--smoke'] : []),
    ...(only === null ? [] : ['--only', only]),
    ...((only === 'history' || only === 'postgres') && process.argv.includes('--sizes') ? ['--sizes', historyArgs.sizes.join(',')] : []),
    ...(keptJournals === null && historyArgs.journals === null ? [] : ['--journals', '<dir>']),
    ...(only === 'history' && historyArgs.afterKillOnly ? ['--after-kill-only'] : []),
    ...(only === 'history' && historyArgs.toolsOnly ? ['--tools-only'] : []),
    ...(record ? ['--record'] : []),
  ];
  return flags.length === 0 ? 'npm run bench' : `npm run bench -- ${flags.join(' ')}`;
}

function buildReport(loadStart: number): BenchReport {
  const judge = (name: string, unit: string, what: string, target: Figure['target']) => figureOf(unit, what, samples[name] ?? [], target, errors.get(name) ?? (samples[name] ? undefined : 'no sample'));
  const figures = Object.fromEntries(FIGURE_NAMES.map((name) => [name, judge(name, HEADLINE_INFO[name].unit, HEADLINE_INFO[name].what, TARGETS[name] ?? null)])) as BenchReport['figures'];
  const details = Object.fromEntries(
    Object.entries(DETAIL_INFO)
      .filter(([name]) => !(name in figures))
      .map(([name, info]) => [name, judge(name, info.unit, info.what, DETAIL_TARGETS[name] ?? null)]),
  );
  return {
    generated_at: new Date().toISOString(),
    command: commandLine(),
    machine: {
      cpus: os.cpus().length,
      cpu_model: os.cpus()[0]?.model ?? 'unknown',
      memory_gib: Math.round(os.totalmem() / 1024 ** 3),
      node: process.version,
      load_start: loadStart,
      load_end: os.loadavg()[0]!,
    },
    repetitions: plan.reps,
    figures,
    details,
    profiles,
    notes: [...measuredNotes({ ...figures, ...details }), ...STATIC_NOTES],
  };
}

const loadStart = os.loadavg()[0]!;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'interlock-bench-'));
say(`${smoke ? 'smoke' : 'full'} run in ${dir}; load average ${loadStart.toFixed(1)} on ${os.cpus().length} cores`);
try {
  await runAll(dir);
} finally {
  fs.rmSync(dir, { recursive: true, force: true });
}
const report = buildReport(loadStart);
if (only !== null) {
  // One stage's figures only: the rest of the report was not measured by this run.
  const measured = (figures: Record<string, Figure>) => Object.fromEntries(Object.entries(figures).filter(([, figure]) => figure.samples.length > 0 || figure.error !== 'no sample'));
  const stageReport = { ...report, figures: measured(report.figures) as BenchReport['figures'], details: measured(report.details), notes: [] };
  process.stdout.write(`${JSON.stringify(stageReport)}\n`);
  if (record) {
    const whole = JSON.parse(fs.readFileSync(BENCH_JSON, 'utf8')) as BenchReport;
    const merged = { ...whole, figures: { ...whole.figures, ...stageReport.figures }, details: { ...whole.details, ...stageReport.details } };
    const recorded = recordStageRun(whole, stageReport, [...measuredNotes({ ...merged.figures, ...merged.details }), ...STATIC_NOTES]);
    fs.writeFileSync(BENCH_JSON, `${JSON.stringify(recorded, null, 2)}\n`);
    fs.writeFileSync(BENCH_MD, renderBenchMarkdown(recorded));
    say(`recorded the ${only} stage's figures in ${path.relative(REPO_ROOT, BENCH_JSON)} and ${path.relative(REPO_ROOT, BENCH_MD)}`);
  }
} else if (smoke) {
  process.stdout.write(`${JSON.stringify(report)}\n`);
} else {
  fs.writeFileSync(BENCH_JSON, `${JSON.stringify(report, null, 2)}\n`);
  fs.writeFileSync(BENCH_MD, renderBenchMarkdown(report));
  say(`wrote ${path.relative(REPO_ROOT, BENCH_JSON)} and ${path.relative(REPO_ROOT, BENCH_MD)}`);
}
process.exit(0);
