import type { FigureInfo } from './figures.ts';
import { HISTORY_SIZES, type HistorySize, KILL_BEHIND_ENTRIES } from './history-args.ts';

const LABEL: Record<HistorySize, string> = { '100k': '100k', '1m': '1M', '10m': '10M' };

/** What each of the history stage's per-size figures means, for the journal of `size` entries. */
function perSize(size: HistorySize): Record<string, FigureInfo> {
  const n = LABEL[size];
  return {
    [`start_up_s_${size}`]: {
      unit: 's',
      what: `a server process as production runs it (node dist/server/main.js, compiled at the stage's start) over a copy of a ${n}-entry journal of realistic chains, its derived tables built by an earlier start and stopped cleanly (SIGTERM, exit 0): spawn → /readyz 200`,
    },
    [`start_up_after_kill_s_${size}`]: {
      unit: 's',
      what: `the ${n} server SIGKILLed once ready, then ${KILL_BEHIND_ENTRIES.toLocaleString('en-US')} entries appended to its journal as a server writes them, so the derived tables' last batch is that far behind: spawn → /readyz 200`,
    },
    [`rss_mib_${size}`]: {
      unit: 'MiB',
      what: `peak RSS (VmHWM) of the ${n} server after its start, the inbox, scoreboard and ledger's first pages, and 10,000 random old requests read by their agent (GET /v1/refunds/:request_id) with their receipts by finance (GET /api/ledger/:id/receipt), and 20 of their item pages (GET /api/items/:id, each paced by the Stripe budget's display reads)`,
    },
    [`inbox_first_page_ms_${size}`]: { unit: 'ms', what: `GET /api/inbox right after the ${n} server was ready, by finance` },
    [`scoreboard_first_page_ms_${size}`]: { unit: 'ms', what: `GET /api/scoreboard right after the inbox's first page on the ${n} server` },
    [`ledger_first_page_ms_${size}`]: { unit: 'ms', what: `GET /api/ledger (its first page) right after the scoreboard's on the ${n} server` },
    [`ledger_csv_rss_growth_mib_${size}`]: {
      unit: 'MiB',
      what: `the ${n} server's peak RSS during a whole GET /api/ledger.csv minus its RSS just before, after those reads (VmRSS sampled every 20 ms)`,
    },
    [`journal_bytes_${size}`]: { unit: 'bytes', what: `the ${n}-entry journal database file, as generated` },
    [`backup_s_${size}`]: { unit: 's', what: `npm run backup <empty dir> of the stopped ${n} server's journal (SQLite's online backup, config and manifest), spawn → exit` },
    [`backup_bytes_${size}`]: { unit: 'bytes', what: 'every file that backup wrote' },
    [`first_start_s_${size}`]: {
      unit: 's',
      what: `the first start over the ${n} journal with no derived tables, as after an upgrade to a new views version: every entry folded into the tables, then ready (spawn → /readyz 200; one start, not a median of three)`,
    },
    [`rebuild_views_s_${size}`]: { unit: 's', what: `npm run rebuild-views -- --db over the stopped ${n} server's journal: the derived tables reset and rebuilt from every entry, spawn → exit` },
    [`verify_journal_s_${size}`]: { unit: 's', what: `npm run verify -- --journal over the stopped ${n} server's journal (offline, read-only, every entry and both chains), spawn → exit` },
    [`verify_journal_entries_per_s_${size}`]: { unit: '/s', what: `entries of the ${n} journal over that verify's seconds` },
    [`background_pass_s_${size}`]: {
      unit: 's',
      what: `the first background pass over the whole ${n} journal of a server started with the shipped config (10 ms slices, a quarter of a core), its sleeps included: interlock_journal_pass_last_duration_seconds once the pass completed (one pass, not a median of three)`,
    },
    [`pass_reads_p99_ms_${size}`]: { unit: 'ms', what: `p99 of reads of random old requests, 20 a second (open loop): their agent's GET /v1/refunds/:request_id and finance's GET /api/ledger/:id/receipt in turn, while that pass ran on the ${n} server` },
    [`quiet_reads_p99_ms_${size}`]: { unit: 'ms', what: `p99 of the same reads in the minute after the pass completed, with no pass running: beside pass_reads_p99_ms_${size}` },
  };
}

/**
 * The history stage's figures the page shows as headline ones, in its order: each the median of
 * three. What one run measures (a first start, the whole pass, the 10M tools and the journal's
 * verification rate, measured over the largest journal) is among the details.
 */
export const HISTORY_HEADLINE = [
  'start_up_s_100k',
  'start_up_s_1m',
  'start_up_s_10m',
  'start_up_s_10m_minus_100k',
  'start_up_s_1m_minus_100k',
  'start_up_after_kill_s_1m',
  'start_up_after_kill_s_10m',
  'rss_mib_empty',
  'rss_mib_100k',
  'rss_mib_1m',
  'rss_mib_10m',
  'rss_growth_1m_over_100k',
  'rss_growth_10m_over_100k',
  'ledger_first_page_ms_10m',
  'scoreboard_first_page_ms_10m',
  'ledger_csv_rss_growth_mib_10m',
  'rebuild_views_s_100k',
] as const;

/** Every figure the history stage can record, by name: the headline ones take these words too. */
export const HISTORY_INFO: Record<string, FigureInfo> = {
  ...Object.assign({}, ...HISTORY_SIZES.map(perSize)),
  rss_mib_empty: { unit: 'MiB', what: 'peak RSS (VmHWM) of a server over an empty data folder after its start and the three first pages' },
  rss_growth_1m_over_100k: { unit: '×', what: 'rss_mib_1m ÷ rss_mib_100k, repetition by repetition' },
  rss_growth_10m_over_100k: { unit: '×', what: 'rss_mib_10m ÷ rss_mib_100k, repetition by repetition: memory that grows with history shows here' },
  start_up_s_1m_minus_100k: { unit: 's', what: 'start_up_s_1m − start_up_s_100k, repetition by repetition' },
  start_up_s_10m_minus_100k: { unit: 's', what: 'start_up_s_10m − start_up_s_100k, repetition by repetition: start-up that grows with history shows here' },
  verify_journal_entries_per_s: { unit: '/s', what: 'npm run verify -- --journal over the largest journal of the run: its entries over the seconds from spawn to exit' },
  journal_generate_s_per_million: { unit: 's', what: 'seconds to generate a million entries of realistic chains through the store, over the journals this run generated (not a target)' },
};
