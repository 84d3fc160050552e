import type { FigureInfo } from './figures.ts';
import type { Target } from './report.ts';

// The `postgres` stage's figures: what each means, which the page headlines, and their targets.
// Each names the SQLite figure it stands beside, where the SQLite stages measure one.

/** The figures the page shows in its PostgreSQL section, in its order: each the median of the repetitions. */
export const PG_HEADLINE = [
  'pg_http_refunds_per_s_1_server',
  'pg_http_refunds_per_s_2_servers',
  'pg_append_lock_hold_ms_p50',
  'pg_append_lock_hold_ms_p99',
  'pg_pool_waits',
  'pg_pool_wait_ms_p99',
  'pg_inbox_across_ms_p95',
  'pg_lease_move_s',
  'pg_start_up_s_100k',
  'pg_rss_mib_100k',
] as const;

const LOAD =
  "routine refunds committed per second (COMMITTED entries written in the database during the run, whether the agent's POST /v1/refunds was answered 200 COMMITTED or, past the answer's time bound, 202 and then committed), compiled server processes on one PostgreSQL 15 database (a cluster of the stage's own, fsync and synchronous_commit on), sandbox in its own process without limits, Interlock's Stripe budget far above the load, 64 keep-alive connections in all, a fresh database each repetition";

/** Every figure the `postgres` stage records, by name. */
export const PG_INFO: Record<string, FigureInfo> = {
  pg_http_refunds_per_s_1_server: { unit: '/s', what: `${LOAD}; one server (beside SQLite's http_refunds_per_s, one server on a file)` },
  pg_http_refunds_per_s_2_servers: { unit: '/s', what: `the same split over two servers on the one database, 32 connections each: both servers' commits over the run` },
  pg_append_lock_hold_ms_p50: {
    unit: 'ms',
    what: "how long a journal write transaction held the head row's lock (from the lock taken to COMMIT answered; a group commit's writes share one), p50 since each server's start (its warm-up included), the mean of the two servers' (interlock_pg_append_lock_hold_seconds), over the two-server run",
  },
  pg_append_lock_hold_ms_p99: { unit: 'ms', what: 'the same at p99, the larger of the two servers\'' },
  pg_pool_waits: { unit: 'checkouts', what: "checkouts from the two servers' PostgreSQL pools that found every connection busy and waited, since their start (interlock_pg_pool_wait_seconds_count)" },
  pg_pool_wait_ms_p99: { unit: 'ms', what: 'p99 of those waits for a connection, the larger of the two servers\' (0 when none waited)' },
  pg_inbox_across_ms_p95: {
    unit: 'ms',
    what: "an agent's POST of a refund needing a person to server A → its item on an approver's websocket open on server B (LISTEN/NOTIFY between them), p95 over 200 requests 8 at a time, right after the two-server load (beside SQLite's ws_visible_ms_p95, one server)",
  },
  pg_lease_move_s: { unit: 's', what: "the server holding the sla-ticker lease (work_leases) SIGKILLed → the other server holds it, read from the table every 20 ms" },
  pg_start_up_s_100k: {
    unit: 's',
    what: "the compiled server over a database holding the 100k-entry journal (the history stage's, copied in by COPY), its derived tables built by an earlier start and stopped cleanly: spawn → /readyz 200 (beside SQLite's start_up_s_100k)",
  },
  pg_rss_mib_100k: {
    unit: 'MiB',
    what: "that server's peak RSS (VmHWM) after its start, the inbox, scoreboard and ledger's first pages, 10,000 random old requests and their receipts read, and 20 item pages (beside SQLite's rss_mib_100k)",
  },
  pg_http_answered_per_s_1_server: { unit: '/s', what: "requests of the one-server run answered 200 COMMITTED per second, as SQLite's http_refunds_per_s counts them (the rest were answered 202 past the answer's time bound)" },
  pg_http_answered_per_s_2_servers: { unit: '/s', what: 'the same in the two-server run' },
  pg_http_p99_ms_1_server: { unit: 'ms', what: 'p99 latency of the requests of the one-server run answered 200 COMMITTED (beside SQLite\'s http_p99_ms)' },
  pg_http_p99_ms_2_servers: { unit: 'ms', what: 'p99 latency of the requests of the two-server run answered 200 COMMITTED' },
  pg_http_failed_2_servers: { unit: '', what: 'requests of the two-server run not answered 200 COMMITTED (202 past the answer\'s time bound, or a failure)' },
  pg_inbox_across_ms_p50: { unit: 'ms', what: 'p50 of POST on server A → item on server B\'s websocket' },
  pg_inbox_across_missing: { unit: '', what: 'escalations whose item never reached server B\'s websocket within 15 s, or whose POST failed' },
  pg_ledger_first_page_ms_100k: { unit: 'ms', what: "GET /api/ledger's first page right after the 100k server was ready (beside SQLite's ledger_first_page_ms_100k)" },
  pg_journal_copy_s_100k: { unit: 's', what: "the 100k journal's entries and seals copied from its SQLite file into the database by COPY, its head set, counts and last global hash checked (one run)" },
  pg_first_start_s_100k: { unit: 's', what: 'the first start over the copied 100k journal: every entry checked against its seals, the derived tables built (one run)' },
  pg_start_up_s_1m: { unit: 's', what: 'as pg_start_up_s_100k over the 1M-entry journal (`--sizes 100k,1m`; beside SQLite\'s start_up_s_1m)' },
  pg_rss_mib_1m: { unit: 'MiB', what: 'as pg_rss_mib_100k over the 1M-entry journal (beside SQLite\'s rss_mib_1m)' },
  pg_ledger_first_page_ms_1m: { unit: 'ms', what: "GET /api/ledger's first page right after the 1M server was ready" },
  pg_journal_copy_s_1m: { unit: 's', what: 'the 1M journal copied in by COPY (one run)' },
  pg_first_start_s_1m: { unit: 's', what: 'the first start over the copied 1M journal (one run)' },
  pg_rss_growth_1m_over_100k: { unit: '×', what: 'pg_rss_mib_1m ÷ pg_rss_mib_100k, repetition by repetition (beside SQLite\'s rss_growth_1m_over_100k)' },
  pg_start_up_growth_1m_over_100k: { unit: '×', what: 'pg_start_up_s_1m ÷ pg_start_up_s_100k, repetition by repetition' },
};

/** Targets of the headline figures. */
export const PG_TARGETS: Readonly<Record<(typeof PG_HEADLINE)[number], Target | undefined>> = {
  pg_http_refunds_per_s_1_server: undefined,
  // Two servers on one database must carry a modest shop's peak, whatever the lock costs.
  pg_http_refunds_per_s_2_servers: { op: '>=', value: 100 },
  pg_append_lock_hold_ms_p50: undefined,
  pg_append_lock_hold_ms_p99: undefined,
  pg_pool_waits: undefined,
  pg_pool_wait_ms_p99: undefined,
  pg_inbox_across_ms_p95: { op: '<=', value: 500 },
  // A dead server's background work moves on within seconds.
  pg_lease_move_s: { op: '<=', value: 10 },
  // The history issue's bounds on start-up and memory, which the 1M figures below are held to too.
  pg_start_up_s_100k: { op: '<=', value: 3 },
  pg_rss_mib_100k: { op: '<=', value: 300, every: true },
};

/** Targets of the detail figures (the 1M ones, measured with `--sizes 100k,1m`). */
export const PG_DETAIL_TARGETS: Readonly<Record<string, Target>> = {
  pg_start_up_s_1m: { op: '<=', value: 3 },
  pg_rss_mib_1m: { op: '<=', value: 300, every: true },
  pg_rss_growth_1m_over_100k: { op: '<=', value: 1.2 },
};

/** Every figure the `postgres` stage owns. */
export const PG_FIGURES: readonly string[] = Object.keys(PG_INFO);
