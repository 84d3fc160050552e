import { configuredCapacity, floorS, stripeCapacity } from './burst-floor.ts';
import { FULL } from './plans.ts';
import { HISTORY_HEADLINE, HISTORY_INFO } from './history-figures.ts';
import { PG_HEADLINE, PG_INFO } from './pg-figures.ts';
import type { FigureName } from './report.ts';

/** How each figure is read: its unit and what was measured. */
export interface FigureInfo {
  unit: string;
  what: string;
}

const count = (n: number) => n.toLocaleString('en-US');
const TEST_AGENTS = count(FULL.burstRefunds.test);
const LIVE_AGENTS = count(FULL.burstRefunds.live);
/** A burst's floor at the configured budget, and at 100% of Stripe's limits. */
const floors = (mode: 'test' | 'live') =>
  `floor ${floorS(FULL.burstRefunds[mode], configuredCapacity(mode))} s at the configured budget (${configuredCapacity(mode).globalPerWindow}/s, ${configuredCapacity(mode).endpointPerWindow}/s per endpoint), ${floorS(FULL.burstRefunds[mode], stripeCapacity(mode))} s at Stripe's own limits`;

/** The headline figures of the issue. */
export const HEADLINE_INFO: Record<FigureName, FigureInfo> = {
  fsync_per_s: { unit: '/s', what: 'raw rate of write(4 KiB) + fdatasync on the disk the journals live on' },
  global_chain_us_per_entry: {
    unit: 'µs',
    what: "what the global chain adds to each journal write: journal_rows_per_s_raw's rows (64 per durable commit) into two journals for 4 s, a commit to each in turn, one without and one with each row's seal written as the store writes it in the row's transaction (the newest seal read, globalHashOf, the journal_seals insert); the difference of their wall time per row, the seal's share of each commit's WAL pages and fsync included",
  },
  gate_effects_per_s: { unit: '/s', what: 'routine effects through the Gate in process, MemoryPayments (no latency), durable SqliteJournal, 64 submitters' },
  gate_p99_ms: { unit: 'ms', what: 'p99 of one Gate.submit in the run above' },
  naive_effects_per_s: { unit: '/s', what: 'the same target called directly (apply only), 64 submitters, no journal' },
  http_refunds_per_s: {
    unit: '/s',
    what: "routine POST /v1/refunds answered 200 COMMITTED, real server process, sandbox in its own process without limits, Interlock's Stripe budget far above the load, 64 keep-alive connections",
  },
  http_p50_ms: { unit: 'ms', what: 'p50 latency of those requests' },
  http_p99_ms: { unit: 'ms', what: 'p99 latency of those requests' },
  http_p99_ms_at_1000: { unit: 'ms', what: 'p99 latency with requests sent at a fixed 1,000/s (open loop: latency counted from when each was due)' },
  stripe_calls_per_refund: {
    unit: 'calls',
    what: `requests the sandbox answered on /v1 (429s included) per routine refund, over a repetition's two bursts (${TEST_AGENTS} refunds under test-mode limits, ${LIVE_AGENTS} under live-mode limits), counted at the sandbox`,
  },
  burst_settle_s_test: {
    unit: 's',
    what: `${TEST_AGENTS} agents at once, each a routine refund of its own payment, sandbox holding test-mode limits (25/s), Interlock at its default share of them: first send → the last agent's final answer; ${floors('test')}`,
  },
  burst_settle_s_live: {
    unit: 's',
    what: `the same with ${LIVE_AGENTS} agents, sandbox holding live-mode limits (100/s, 25/s per endpoint), Interlock configured for them (global_per_second 100, endpoint_per_second 25) at its default share; ${floors('live')}`,
  },
  burst_429s: { unit: 'of calls', what: "the sandbox's 429 rate_limit answers as a share of every request it answered, over both bursts" },
  burst_to_person: { unit: 'requests', what: 'requests escalated to a person in the servers\' journals after both bursts (warm-ups included)' },
  burst_first_answer_p99_ms_200_agents: {
    unit: 'ms',
    what: `p99 over the ${TEST_AGENTS} agents of the test-mode burst (${TEST_AGENTS} connections) of the request that had their first answer other than 429: final, or 202 waiting its turn to reach Stripe`,
  },
  burst_first_answer_p99_ms_1000_agents: { unit: 'ms', what: `the same over the ${LIVE_AGENTS} agents of the live-mode burst (${LIVE_AGENTS} connections)` },
  overload_shed_p99_ms: {
    unit: 'ms',
    what: `p99 of the agents' requests answered 429 rate_limited with Retry-After, over ${FULL.overloadMs / 1000} s offered four times the capacity measured just before (overload_capacity_per_s), from when each was due`,
  },
  overload_answered_p99_ms: { unit: 'ms', what: 'p99 of the agents\' requests of that flood that were answered (a refund 200 or 202, a status read), from when each was due' },
  overload_decision_max_ms: {
    unit: 'ms',
    what: `the slowest of ${FULL.overloadDecisions} approvals a person made one at a time during that flood (POST /api/items/:effect_id/decisions, each sending its refund to Stripe), answered 200`,
  },
  rebuild_s_100k: {
    unit: 's',
    what: 'start-up over a 100k-entry journal as npm start makes it (server/app/runtime.ts): open, buildInterlock, check() (the integrity check: guards, seal check, the replay into the views that verifies every entry and recomputes the global chain, the hold against the newest checkpoint in the store and a file mirror, the first checkpoint signed), start() (recovery and sweeps), ready',
  },
  rebuild_s_1m: {
    unit: 's',
    what: 'the same over a 1M-entry journal written with its seals (through the store, as a server writes it); the global chain and checkpoints issue bounds it to 1.25 × its figure before the integrity check (9.72 s at 493af03), 12.15 s, looser than the target here',
  },
  start_up_integrity_s_1m: {
    unit: 's',
    what: "of that start-up, the integrity check alone: check() outside the replay as it ran (guards, seal check, the head held to the last seal, the checkpoint hold, the first checkpoint signed and mirrored) plus the global chain's part of the replay (the seals read as the store reads them, globalHashOf and the comparison per entry), timed again alone in the same process right after; rebuild_s_1m minus it is rebuild_s_1m_without_integrity",
  },
  checkpoint_sign_ms: {
    unit: 'ms',
    what: 'one checkpoint of the 1M journal signed (C2SP note, Ed25519), stored and appended to a file mirror by Checkpointer.sign, after one more entry, in the started server process; median of 5 per start-up',
  },
  checkpoint_us_per_entry: { unit: 'µs', what: 'that checkpoint spread over the entries between two checkpoints (integrity.checkpoint_every_entries, 1,000)' },
  scoreboard_ms_1m_cold: { unit: 'ms', what: 'computeScoreboard over all 1M entries (already loaded in memory)' },
  scoreboard_ms_1m_warm: { unit: 'ms', what: 'ScoreboardProjection.board() after one more entry, on the started 1M server' },
  verify_receipts_per_s: { unit: '/s', what: 'verifyReceipt of signed receipts of realistic chains, key given as PEM' },
  ws_visible_ms_p95: { unit: 'ms', what: 'agent POST of a refund needing a person → its item on an approver\'s open websocket, p95 over 1,000 requests' },
  notify_p95_ms: {
    unit: 'ms',
    what: "agent POST of a refund escalated to ap-leads → the last of its three messages received (an email to each member over a real SMTP server, one POST to the group's Slack-style webhook), from the POST's answer, p95 over 200 items sent 5/s",
  },
  stale_chip_p95_ms: {
    unit: 'ms',
    what: "a refund made by hand with the stripe SDK on a queued item's payment, outside Interlock → the item shown stale on an approver's open websocket (the sandbox's signed webhook, the server's read of the payment, the facts message), from the SDK call's answer, p95 over 30 refunds made one at a time while arriving items keep the facts cache's 2 reads/s pace busy",
  },
  ledger_csv_s_1m: { unit: 's', what: 'GET /api/ledger.csv of the 1M-entry journal, every row, from a real server process (started over a copy of it) until the last byte arrived' },
  ...(Object.fromEntries(HISTORY_HEADLINE.map((name) => [name, HISTORY_INFO[name]!])) as Record<(typeof HISTORY_HEADLINE)[number], FigureInfo>),
  ...(Object.fromEntries(PG_HEADLINE.map((name) => [name, PG_INFO[name]!])) as Record<(typeof PG_HEADLINE)[number], FigureInfo>),
  ledger_csv_rss_growth_mib_1m: { unit: 'MiB', what: "the server process's peak RSS during that download minus its RSS just before; the first download after start-up is the first repetition (VmRSS from /proc, sampled every 20 ms)" },
};

/** Figures that explain the headline ones. */
export const DETAIL_INFO: Record<string, FigureInfo> = {
  journal_rows_per_s_raw: { unit: '/s', what: 'rows shaped like journal entries inserted straight into the journal\'s schema, 64 per commit, no gate, no hashing: the storage\'s own bound' },
  journal_rows_per_s_raw_sealed: { unit: '/s', what: 'the sealed journal of global_chain_us_per_entry: those rows, each with its seal, per second of the time spent writing them' },
  gate_p50_ms: { unit: 'ms', what: 'p50 of one Gate.submit' },
  gate_cpu_us_per_effect: { unit: 'µs', what: 'process CPU per routine effect through the Gate' },
  gate_writes_per_commit: { unit: '', what: 'journal writes sharing one commit (one fsync) in the gate run' },
  gate_commits_per_s: { unit: '/s', what: 'journal commits (fsyncs) per second in the gate run' },
  http_refunds_failed: { unit: '', what: 'requests of a 30 s run not answered 200 COMMITTED' },
  http_server_cpu_ms_per_refund: { unit: 'ms', what: 'server process CPU per refund' },
  http_sandbox_cpu_ms_per_refund: { unit: 'ms', what: 'sandbox process CPU per refund' },
  http_loadgen_cpu_ms_per_refund: { unit: 'ms', what: 'load generator CPU per refund (it shares the 2 cores)' },
  http_fixed_per_s: { unit: '/s', what: 'answered per second while offered 1,000/s' },
  http_fixed_p50_ms: { unit: 'ms', what: 'p50 latency at a fixed 1,000/s' },
  http_fixed_failed: { unit: '', what: 'requests at 1,000/s not answered 200 COMMITTED, or shed beyond the in-flight bound' },
  http_server_idle_cpu_share: { unit: 'of a core', what: 'server CPU with no requests for 10 s, right after the closed-loop runs: its background work' },
  http_server_idle_healthz_max_ms: { unit: 'ms', what: 'the slowest GET /healthz, probed every 100 ms while it was watched: how long the event loop was held' },
  http_server_journal_entries: { unit: 'entries', what: 'the server\'s journal at that moment' },
  idle_server_cpu_share: { unit: 'of a core', what: 'a fresh server over a copy of that journal, sent nothing (the profiled run)' },
  ws_visible_ms_p50: { unit: 'ms', what: 'p50 of POST → item on the websocket' },
  ws_visible_missing: { unit: '', what: 'escalations whose item never arrived, or whose POST failed' },
  notify_p50_ms: { unit: 'ms', what: 'p50 of POST answer → the last of the item\'s three messages' },
  notify_max_ms: { unit: 'ms', what: 'the slowest item: POST answer → its last message' },
  notify_email_p95_ms: { unit: 'ms', what: 'p95 of POST answer → the later of the two emails' },
  notify_slack_p95_ms: { unit: 'ms', what: 'p95 of POST answer → the Slack-style webhook POST' },
  notify_samples: { unit: 'items', what: 'items whose three messages all arrived, per repetition' },
  notify_missing: { unit: '', what: 'items whose messages had not all arrived 30 s after the answer, or whose POST was not queued' },
  stale_chip_p50_ms: { unit: 'ms', what: 'p50 of hand refund answered → the item shown stale on the websocket' },
  stale_chip_max_ms: { unit: 'ms', what: 'the slowest hand refund → stale chip' },
  stale_chip_samples: { unit: 'refunds', what: 'hand refunds whose item was shown stale, per repetition' },
  stale_chip_missing: { unit: '', what: 'hand refunds whose item was not shown stale within 30 s' },
  burst_first_answer_p50_ms_200_agents: { unit: 'ms', what: 'p50 of that first answer other than 429, test-mode burst' },
  burst_first_answer_p50_ms_1000_agents: { unit: 'ms', what: 'p50 of that first answer other than 429, live-mode burst' },
  burst_first_answer_wait_p99_ms_200_agents: {
    unit: 'ms',
    what: "p99 of an agent's first send → that answer, test-mode burst: Interlock's own 429s beyond 128 requests in flight and the Retry-After waiting after them included",
  },
  burst_first_answer_wait_p99_ms_1000_agents: { unit: 'ms', what: "p99 of an agent's first send → that answer, live-mode burst" },
  burst_turned_away_200_agents: { unit: 'answers', what: 'answers 429 from Interlock itself (128 refund requests in flight already, nothing written) in the test-mode burst; the agent sent again after Retry-After' },
  burst_turned_away_1000_agents: { unit: 'answers', what: 'the same in the live-mode burst' },
  burst_not_committed: { unit: 'agents', what: 'agents of both bursts whose final answer was not a committed refund, or who had none within three times the floor plus 30 s' },
  burst_connection_errors: { unit: '', what: 'requests of both bursts that failed on the connection (the agent sent the same again)' },
  burst_agents_lag_max_ms: {
    unit: 'ms',
    what: "the longest the agents' own event loop was held in either burst (one process runs every agent): at most this much of a first answer's time can be the load generator's",
  },
  overload_capacity_per_s: { unit: '/s', what: `routine refunds answered 200 COMMITTED per second by a fresh server, closed loop over 64 connections for ${FULL.overloadCapacityMs / 1000} s: the capacity the flood is four times` },
  overload_offered_per_s: { unit: '/s', what: "agents' requests sent per second in the flood: four times that capacity" },
  overload_answered_per_s: { unit: '/s', what: "agents' requests answered (not shed) per second during the flood" },
  overload_shed_share: { unit: 'of requests', what: "agents' requests of the flood answered 429 rate_limited" },
  overload_shed_p50_ms: { unit: 'ms', what: 'p50 of those 429s, from when each was due' },
  overload_answered_p50_ms: { unit: 'ms', what: 'p50 of the answered requests of the flood, from when each was due' },
  overload_healthz_max_ms: { unit: 'ms', what: 'the slowest GET /healthz, probed every 250 ms during the flood' },
  overload_failed: { unit: '', what: "agents' requests of the flood neither answered nor shed with 429 and Retry-After (a 5xx, a connection error, a timeout, one the load generator could not send), and decisions not answered 200" },
  journal_file_mib_1m: { unit: 'MiB', what: 'size of the 1M-entry journal file' },
  journal_generate_s_1m: { unit: 's', what: 'time to generate both journals through the store (not a target)' },
  rebuild_open_s_1m: { unit: 's', what: 'of the 1M start-up: opening the file and migrating' },
  rebuild_build_s_1m: { unit: 's', what: 'of the 1M start-up: buildInterlock (the services and the app, not listening)' },
  rebuild_check_s_1m: { unit: 's', what: 'of the 1M start-up: check(), the replay included' },
  rebuild_replay_s_1m: { unit: 's', what: 'of the 1M start-up, within check(): the replay (views.replayAtStart) into InboxProjection + ScoreboardProjection, every entry\'s hash, chain link and global hash checked' },
  rebuild_check_outside_replay_s_1m: { unit: 's', what: 'of the 1M start-up: check() minus its replay (guards, seal check, head held to the last seal, checkpoint hold, first checkpoint)' },
  rebuild_global_chain_s_1m: { unit: 's', what: "the global chain's part of the replay, timed again alone right after start-up: seals read as the store reads them, globalHashOf and the comparison, per entry" },
  rebuild_s_1m_without_integrity: { unit: 's', what: 'rebuild_s_1m minus start_up_integrity_s_1m, per start-up: start-up as if there were no integrity check' },
  checkpoint_hold_ms_1m: { unit: 'ms', what: 'Checkpointer.checkAtStart over the started 1M journal, again: the newest checkpoint in the store and the file mirror read, verified, and its head found among the seals' },
  rebuild_sweeps_s_1m: { unit: 's', what: 'of the 1M start-up: start(), recovery and the inbox sweeps (refresh, executeApproved) before ready' },
  rebuild_peak_rss_mib_1m: { unit: 'MiB', what: 'peak RSS (VmHWM) of the 1M start-up process of rebuild_s_1m, including the first scoreboard read' },
  rss_ready_mib_1m: { unit: 'MiB', what: 'RSS when the 1M start-up was ready, before the first scoreboard read' },
  scoreboard_first_read_ms_1m: { unit: 'ms', what: 'the first board() after start-up, which figures every chain' },
  scoreboard_load_ms_1m: { unit: 'ms', what: 'reading and checking all 1M entries before the cold computation' },
  ledger_csv_rows_1m: { unit: 'rows', what: 'ledger rows (requests) in that CSV' },
  ledger_csv_mib_1m: { unit: 'MiB', what: 'size of that CSV' },
  ledger_csv_server_rss_mib_1m: { unit: 'MiB', what: "the server's RSS before the download: the 1M journal's views, the ledger's among them" },
  sim_seeds_per_s: { unit: '/s', what: 'seeds of the whole-system simulator (npm run simulate), 1,000 per repetition, one process' },
  // The history stage's figures at the sizes the page does not headline (the 1M ledger CSV is the ledger stage's).
  ...Object.fromEntries(Object.entries(HISTORY_INFO).filter(([name]) => !(HISTORY_HEADLINE as readonly string[]).includes(name) && name !== 'ledger_csv_rss_growth_mib_1m')),
  // The postgres stage's figures the page does not headline.
  ...Object.fromEntries(Object.entries(PG_INFO).filter(([name]) => !(PG_HEADLINE as readonly string[]).includes(name))),
};

/** Every figure the history stage owns, headline and detail. */
export const HISTORY_FIGURES: readonly string[] = Object.keys(HISTORY_INFO).filter((name) => name !== 'ledger_csv_rss_growth_mib_1m');
