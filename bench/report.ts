import { fileURLToPath } from 'node:url';
import { CALLS_PER_ROUTINE_REFUND, configuredCapacity, floorS, SETTLE_OVER_FLOOR_MAX } from './burst-floor.ts';
import { HEADLINE_INFO } from './figures.ts';
import { HISTORY_HEADLINE } from './history-figures.ts';
import { FULL } from './plans.ts';
import { PG_DETAIL_TARGETS, PG_HEADLINE, PG_TARGETS } from './pg-figures.ts';

/** Where `npm run bench` writes; `--smoke` writes nothing. */
export const BENCH_JSON = fileURLToPath(new URL('../results/bench.json', import.meta.url));
export const BENCH_MD = fileURLToPath(new URL('../results/bench.md', import.meta.url));

/** Every headline figure, by its name in bench.json. */
export const FIGURE_NAMES = [
  'fsync_per_s',
  'global_chain_us_per_entry',
  'gate_effects_per_s',
  'gate_p99_ms',
  'naive_effects_per_s',
  'http_refunds_per_s',
  'http_p50_ms',
  'http_p99_ms',
  'http_p99_ms_at_1000',
  'stripe_calls_per_refund',
  'burst_settle_s_test',
  'burst_settle_s_live',
  'burst_429s',
  'burst_to_person',
  'burst_first_answer_p99_ms_200_agents',
  'burst_first_answer_p99_ms_1000_agents',
  'overload_shed_p99_ms',
  'overload_answered_p99_ms',
  'overload_decision_max_ms',
  'rebuild_s_100k',
  'rebuild_s_1m',
  'start_up_integrity_s_1m',
  'checkpoint_sign_ms',
  'checkpoint_us_per_entry',
  'scoreboard_ms_1m_cold',
  'scoreboard_ms_1m_warm',
  'verify_receipts_per_s',
  'ws_visible_ms_p95',
  'notify_p95_ms',
  'stale_chip_p95_ms',
  'ledger_csv_s_1m',
  'ledger_csv_rss_growth_mib_1m',
  ...HISTORY_HEADLINE,
  ...PG_HEADLINE,
] as const;
/** One headline figure's name. */
export type FigureName = (typeof FIGURE_NAMES)[number];

/** The parts of the page, in the order it shows them: what each group of figures measures. */
export const REPORT_SECTIONS = ['in_process', 'http_without_limits', 'stripe_limits', 'overload', 'start_up', 'history', 'receipts', 'people', 'ledger', 'postgresql'] as const;
/** One part of the page. */
export type ReportSection = (typeof REPORT_SECTIONS)[number];

/** Each part's heading and the sentence under it. */
export const SECTION_TEXT: Record<ReportSection, { heading: string; about: string }> = {
  in_process: { heading: 'The journal and the gate, in process', about: 'The disk, the journal store and the gate in one process, with a target that answers at once.' },
  http_without_limits: {
    heading: 'Interlock over HTTP, against a sandbox without limits',
    about:
      "A server process and the Stripe sandbox in a process of its own, the sandbox holding no rate limits and Interlock's own Stripe budget set far above the load (stage `http-without-limits`): what Interlock itself can do, not the pace Stripe allows.",
  },
  stripe_limits: {
    heading: "Interlock over HTTP, under Stripe's rate limits",
    about:
      "Bursts of agents, each asking a routine refund of a payment of its own and resending or asking again as Retry-After says, against a sandbox holding Stripe's test- or live-mode limits, Interlock configured for them at its default share (stage `stripe-limits`). A burst's floor is the largest, over the account and each endpoint, of the Stripe calls it needs there divided by the calls a second Interlock's budget allows there.",
  },
  overload: {
    heading: 'Interlock over HTTP, offered four times what it answers',
    about:
      "A fresh server's capacity is measured (routine refunds in a closed loop over 64 connections), then agents send four times that many requests a second whatever the answers (an open loop: each timed from when it was due), seven in ten new routine refunds, two asks for an earlier request's status and one resend, while a person approves items one at a time and a balancer probes `/healthz` (stage `overload`). Each agent's request is answered or shed with `429 rate_limited` and `Retry-After` before any of its work.",
  },
  start_up: { heading: 'Start-up and the scoreboard over large journals', about: 'A server process started over generated journals of realistic chains.' },
  history: {
    heading: 'Start-up and memory as history grows',
    about:
      'A server process started over copies of generated journals of realistic chains at 100k, 1M and 10M entries, its derived tables built by an earlier start (stage `history`): start-up, peak memory after a first look and 10,000 old reads, the first pages, and the operators\' tools over the stopped journal. Flat start-up and memory with history is the aim.',
  },
  receipts: { heading: 'Receipts', about: 'Receipts of realistic chains, signed and verified in process.' },
  people: { heading: 'What reaches people', about: "Escalations reaching their group's email and chat, and a refund made by hand reaching an open inbox, each with the shipped config." },
  ledger: { heading: 'The ledger CSV', about: 'The finance ledger of the 1M-entry journal, downloaded from a server process.' },
  postgresql: {
    heading: 'Interlock on PostgreSQL',
    about:
      "Servers on one PostgreSQL 15 database (`DATABASE_URL`), on a cluster the stage starts with PostgreSQL's durable defaults (fsync and synchronous_commit on), measured as the SQLite stages above measure one server on a file (stage `postgres`): each figure names the SQLite figure it stands beside, and the notes compare them.",
  },
};

/** The part of the page each headline figure is shown in. */
export const FIGURE_SECTION: Record<FigureName, ReportSection> = {
  fsync_per_s: 'in_process',
  global_chain_us_per_entry: 'in_process',
  gate_effects_per_s: 'in_process',
  gate_p99_ms: 'in_process',
  naive_effects_per_s: 'in_process',
  http_refunds_per_s: 'http_without_limits',
  http_p50_ms: 'http_without_limits',
  http_p99_ms: 'http_without_limits',
  http_p99_ms_at_1000: 'http_without_limits',
  ws_visible_ms_p95: 'http_without_limits',
  stripe_calls_per_refund: 'stripe_limits',
  burst_settle_s_test: 'stripe_limits',
  burst_settle_s_live: 'stripe_limits',
  burst_429s: 'stripe_limits',
  burst_to_person: 'stripe_limits',
  burst_first_answer_p99_ms_200_agents: 'stripe_limits',
  burst_first_answer_p99_ms_1000_agents: 'stripe_limits',
  overload_shed_p99_ms: 'overload',
  overload_answered_p99_ms: 'overload',
  overload_decision_max_ms: 'overload',
  rebuild_s_100k: 'start_up',
  rebuild_s_1m: 'start_up',
  start_up_integrity_s_1m: 'start_up',
  checkpoint_sign_ms: 'start_up',
  checkpoint_us_per_entry: 'start_up',
  scoreboard_ms_1m_cold: 'start_up',
  scoreboard_ms_1m_warm: 'start_up',
  verify_receipts_per_s: 'receipts',
  notify_p95_ms: 'people',
  stale_chip_p95_ms: 'people',
  ledger_csv_s_1m: 'ledger',
  ledger_csv_rss_growth_mib_1m: 'ledger',
  ...(Object.fromEntries(HISTORY_HEADLINE.map((name) => [name, 'history'])) as Record<(typeof HISTORY_HEADLINE)[number], 'history'>),
  ...(Object.fromEntries(PG_HEADLINE.map((name) => [name, 'postgresql'])) as Record<(typeof PG_HEADLINE)[number], 'postgresql'>),
};

/** A bound a figure must meet: at least (`>=`) or at most (`<=`) `value`. */
export interface Target {
  op: '>=' | '<=';
  value: number;
  /** Judge the worst repetition rather than the median: a bound every run must keep (memory). */
  every?: true;
}

/** Targets of detail figures: the figure is shown with its verdict among the details. */
export const DETAIL_TARGETS: Readonly<Record<string, Target>> = {
  // Every agent of a burst has its refund committed, none left waiting or refused.
  burst_not_committed: { op: '<=', value: 0 },
  // Under a flood every agent is answered or shed with 429 and Retry-After: never a 5xx, never cut off.
  overload_failed: { op: '<=', value: 0 },
  ...PG_DETAIL_TARGETS,
};

/** The targets of the issue, one per figure that has one. */
export const TARGETS: Partial<Record<FigureName, Target>> = {
  gate_effects_per_s: { op: '>=', value: 20_000 },
  http_refunds_per_s: { op: '>=', value: 2_000 },
  http_p99_ms_at_1000: { op: '<=', value: 20 },
  stripe_calls_per_refund: { op: '<=', value: CALLS_PER_ROUTINE_REFUND },
  // Within 1.25 times the floor at the budget Interlock is configured to use, at the full run's sizes.
  burst_settle_s_test: { op: '<=', value: SETTLE_OVER_FLOOR_MAX * floorS(FULL.burstRefunds.test, configuredCapacity('test')) },
  burst_settle_s_live: { op: '<=', value: SETTLE_OVER_FLOOR_MAX * floorS(FULL.burstRefunds.live, configuredCapacity('live')) },
  // Pacing keeps Stripe's 429s to the odd one a clock's jitter lets through.
  burst_429s: { op: '<=', value: 0.01 },
  // A pace is never a reason to ask a person.
  burst_to_person: { op: '<=', value: 0 },
  burst_first_answer_p99_ms_200_agents: { op: '<=', value: 250 },
  burst_first_answer_p99_ms_1000_agents: { op: '<=', value: 1_000 },
  // Offered four times what it answers, a shed is told at once, what is taken is answered within a
  // second, and a person's decision gets through within a second.
  overload_shed_p99_ms: { op: '<=', value: 50 },
  overload_answered_p99_ms: { op: '<=', value: 1_000 },
  overload_decision_max_ms: { op: '<=', value: 1_000 },
  scoreboard_ms_1m_cold: { op: '<=', value: 2_000 },
  scoreboard_ms_1m_warm: { op: '<=', value: 5 },
  ws_visible_ms_p95: { op: '<=', value: 500 },
  notify_p95_ms: { op: '<=', value: 2_000 },
  stale_chip_p95_ms: { op: '<=', value: 1_000 },
  // The CSV streams rows from the store with backpressure; holding them would grow with the journal.
  // Every download counts, the first after start-up (the worst) among them.
  ledger_csv_rss_growth_mib_1m: { op: '<=', value: 64, every: true },
  // History must not weigh: start-up and memory stay flat from 100k to 10M entries, with the
  // derived tables built by an earlier start (rebuild_s_1m and rss_mib_1m's bounds before them).
  start_up_s_10m: { op: '<=', value: 3 },
  start_up_s_10m_minus_100k: { op: '<=', value: 1 },
  start_up_after_kill_s_10m: { op: '<=', value: 4 },
  rss_mib_10m: { op: '<=', value: 300 },
  rss_growth_10m_over_100k: { op: '<=', value: 1.2 },
  ledger_first_page_ms_10m: { op: '<=', value: 200 },
  scoreboard_first_page_ms_10m: { op: '<=', value: 200 },
  ledger_csv_rss_growth_mib_10m: { op: '<=', value: 64, every: true },
  ...Object.fromEntries(Object.entries(PG_TARGETS).filter(([, target]) => target !== undefined)),
};

/** One measured figure: the median of its repetitions, their spread, and its target. */
export interface Figure {
  unit: string;
  /** What was measured, in one sentence. */
  what: string;
  /** One value per repetition, in the order they ran. */
  samples: number[];
  median: number | null;
  min: number | null;
  max: number | null;
  target: Target | null;
  /** Whether the median (every repetition, for a target that says so) meets the target; null with no target or no measurement. */
  met: boolean | null;
  /** Why there is no measurement, when a repetition failed. */
  error?: string;
}

/** The heaviest functions of one CPU profile, by self time. */
export interface ProfileSummary {
  name: string;
  /** What ran while it was profiled. */
  workload: string;
  sampled_ms: number;
  /** Time by area of the code, inclusive of what each area calls. */
  areas: { area: string; ms: number; pct: number }[];
  top: { fn: string; where: string; self_ms: number; self_pct: number }[];
}

/** Everything one run of `npm run bench` found. */
export interface BenchReport {
  generated_at: string;
  command: string;
  machine: {
    cpus: number;
    cpu_model: string;
    memory_gib: number;
    node: string;
    /** The 1-minute load average when the run started and ended: above `cpus`, other work shared the machine. */
    load_start: number;
    load_end: number;
  };
  repetitions: number;
  figures: Record<FigureName, Figure>;
  /** Figures that explain the headline ones (breakdowns, batch sizes, error counts). */
  details: Record<string, Figure>;
  profiles: ProfileSummary[];
  notes: string[];
  /**
   * Stages run again alone after the whole run (`--only <stage> --record`): their figures replace
   * the whole run's, and each such run is named here with its own time and load.
   */
  stage_runs?: StageRun[];
}

/** One stage run alone whose figures were recorded over a whole run's. */
export interface StageRun {
  command: string;
  generated_at: string;
  load_start: number;
  load_end: number;
  /** The figures (headline and detail) this run measured and recorded. */
  figures: string[];
}

/**
 * `report` with the figures `stageReport` measured put in place of its own, and the stage run
 * named; the notes are the caller's, made again from the merged figures.
 */
export function recordStageRun(report: BenchReport, stageReport: BenchReport, notes: string[]): BenchReport {
  const measured = [...Object.keys(stageReport.figures), ...Object.keys(stageReport.details)];
  const run: StageRun = {
    command: stageReport.command,
    generated_at: stageReport.generated_at,
    load_start: stageReport.machine.load_start,
    load_end: stageReport.machine.load_end,
    figures: measured,
  };
  const earlier = (report.stage_runs ?? []).map((r) => ({ ...r, figures: r.figures.filter((f) => !measured.includes(f)) })).filter((r) => r.figures.length > 0);
  return {
    ...report,
    figures: { ...report.figures, ...stageReport.figures },
    details: { ...report.details, ...Object.fromEntries(Object.entries(stageReport.details).filter(([name]) => !(name in report.figures))) },
    notes,
    stage_runs: [...earlier, run],
  };
}

/** Why a figure named here is absent from a results file: it was added after the run that wrote the file. */
export const NOT_IN_THIS_RUN = 'not in this run (the figure was added after it)';

/** A headline figure of `report`, or NOT MEASURED when the run that wrote the report predates the figure. */
export function figureIn(report: BenchReport, name: FigureName): Figure {
  const figure = (report.figures as Partial<BenchReport['figures']>)[name];
  return figure ?? figureOf(HEADLINE_INFO[name].unit, HEADLINE_INFO[name].what, [], TARGETS[name] ?? null, NOT_IN_THIS_RUN);
}

/** Whether `value` meets `target`. */
export function meets(value: number, target: Target): boolean {
  return target.op === '>=' ? value >= target.value : value <= target.value;
}

/** A figure from its samples, judged against its target. */
export function figureOf(unit: string, what: string, samples: number[], target: Target | null = null, error?: string): Figure {
  const sorted = [...samples].sort((a, b) => a - b);
  const n = sorted.length;
  const median = n === 0 ? null : n % 2 === 1 ? sorted[(n - 1) / 2]! : (sorted[n / 2 - 1]! + sorted[n / 2]!) / 2;
  return {
    unit,
    what,
    samples,
    median,
    min: n === 0 ? null : sorted[0]!,
    max: n === 0 ? null : sorted[n - 1]!,
    target,
    met: median === null || target === null ? null : meets(target.every ? (target.op === '<=' ? sorted[n - 1]! : sorted[0]!) : median, target),
    ...(error === undefined ? {} : { error }),
  };
}

/** A number as a person reads it: 3 significant digits, thousands grouped. */
export function formatValue(value: number | null): string {
  if (value === null) return '—';
  const abs = Math.abs(value);
  const digits = abs >= 100 ? 0 : abs >= 10 ? 1 : abs >= 1 ? 2 : 3;
  return value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

function verdict(figure: Figure): string {
  if (figure.error !== undefined) return `**NOT MEASURED**: ${figure.error}`;
  if (figure.met === null) return '';
  return figure.met ? 'met' : '**MISSED**';
}

function figureRow(name: string, figure: Figure): string {
  const target = figure.target ? `${figure.target.op} ${formatValue(figure.target.value)}${figure.target.every ? ' (every run)' : ''}` : '—';
  const spread = `${formatValue(figure.min)}–${formatValue(figure.max)}`;
  const cells = [`\`${name}\``, `${formatValue(figure.median)} ${figure.unit}`, spread, target, verdict(figure), figure.what];
  return `| ${cells.join(' | ')} |`;
}

const TABLE_HEAD = '| figure | median | spread (min–max) | target | verdict | what |\n| --- | --- | --- | --- | --- | --- |';

function profileSection(profile: ProfileSummary): string[] {
  const areas = profile.areas.map((a) => `| ${a.area} | ${formatValue(a.ms)} | ${a.pct.toFixed(1)}% |`);
  const rows = profile.top.map((t) => `| ${t.fn} | ${t.where} | ${formatValue(t.self_ms)} | ${t.self_pct.toFixed(1)}% |`);
  return [
    `### ${profile.name}`,
    '',
    `${profile.workload} Sampled ${formatValue(profile.sampled_ms)} ms of wall time.`,
    '',
    '| area (inclusive; areas overlap) | ms | share |',
    '| --- | --- | --- |',
    ...areas,
    '',
    '| heaviest function (self time) | where | ms | share |',
    '| --- | --- | --- | --- |',
    ...rows,
    '',
  ];
}

/** bench.md: a pure function of bench.json, so the two cannot disagree. */
export function renderBenchMarkdown(report: BenchReport): string {
  const missed = FIGURE_NAMES.filter((name) => figureIn(report, name).met === false || figureIn(report, name).error !== undefined);
  const m = report.machine;
  const shared = m.load_start > m.cpus || m.load_end > m.cpus;
  const lines = [
    '# Benchmarks',
    '',
    `Generated by \`${report.command}\` at ${report.generated_at}; do not edit by hand. Each figure is the`,
    `median of ${report.repetitions} repetitions, with the spread of all of them, against its target.`,
    '',
    `Machine: ${m.cpus} × ${m.cpu_model}, ${m.memory_gib} GiB, Node ${m.node}. Load average ${m.load_start.toFixed(1)} at the`,
    `start and ${m.load_end.toFixed(1)} at the end${shared ? ` (above ${m.cpus} cores: other work shared the machine during the run, so every figure is lower than on an idle one)` : ''}.`,
    '',
    ...(report.stage_runs ?? []).flatMap((run) => [
      `These figures were measured again by \`${run.command}\` at ${run.generated_at}, the stage alone (load average ${run.load_start.toFixed(1)} at its start and ${run.load_end.toFixed(1)} at its end), and replace the whole run's: ${run.figures.map((f) => `\`${f}\``).join(', ')}.`,
      '',
    ]),
    missed.length === 0 ? 'Every target is met.' : `Targets missed or not measured: ${missed.map((n) => `\`${n}\``).join(', ')}.`,
    '',
    '## Figures',
    '',
    ...REPORT_SECTIONS.flatMap((section) => [
      `### ${SECTION_TEXT[section].heading}`,
      '',
      SECTION_TEXT[section].about,
      '',
      TABLE_HEAD,
      ...FIGURE_NAMES.filter((name) => FIGURE_SECTION[name] === section).map((name) => figureRow(name, figureIn(report, name))),
      '',
    ]),
    '## Details',
    '',
    TABLE_HEAD,
    ...Object.entries(report.details).map(([name, figure]) => figureRow(name, figure)),
    '',
    '## Where the time goes (CPU profiles from this run)',
    '',
    ...report.profiles.flatMap(profileSection),
    '## Notes',
    '',
    ...report.notes.flatMap((note) => [`- ${note}`]),
    '',
  ];
  return lines.join('\n');
}
