// One start-up of Interlock's services over an existing journal, timed, in a process of its own
// so its memory is its own. Usage:
//   node --import tsx bench/rebuild-child.ts rebuild <journal> <config> <dataDir>
//   node --import tsx bench/rebuild-child.ts cold <journal> <config>
// Prints one JSON line with what it measured.
import fs from 'node:fs';
import { performance } from 'node:perf_hooks';
import { SqliteJournal } from '../db/journal-store.ts';
import { openDatabase } from '../db/open.ts';
import type { Entry } from '../shared/entries.ts';
import { AppClock } from '../server/clock.ts';
import { loadConfig } from '../server/config/load.ts';
import { computeScoreboard } from '../server/scoreboard/figures.ts';
import { createServices, startServices } from '../server/services.ts';
import { createStripeClient } from '../server/targets/stripe-refunds.ts';
import { percentile } from './stats.ts';

/** Warm reads of the board, each after one more entry; the median is reported. */
const WARM_READS = 7;
/** Entries read per page when loading the whole journal. */
const SCAN_PAGE = 10_000;
/** A bound on what the cold computation loads. */
const ENTRIES_MAX = 5_000_000;

const [mode, file, configPath, dataDir] = process.argv.slice(2);
if ((mode !== 'rebuild' && mode !== 'cold') || file === undefined || configPath === undefined) {
  throw new Error('usage: rebuild|cold <journal> <config> [dataDir]');
}

/** Peak resident memory of this process so far, in MiB (VmHWM). */
function peakRssMib(): number {
  const status = fs.readFileSync('/proc/self/status', 'utf8');
  const kib = Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1] ?? Number.NaN);
  return kib / 1024;
}

const mib = (bytes: number) => bytes / 1024 / 1024;

async function rebuild(): Promise<Record<string, number>> {
  const startMs = performance.now();
  const database = openDatabase(file!);
  const openedMs = performance.now();
  const config = loadConfig(configPath);
  // Nothing here reaches Stripe: the journal's chains are all settled. A call would fail loudly.
  const stripe = createStripeClient('sk_test_bench_unreachable', { host: '127.0.0.1', port: 9, protocol: 'http' });
  const services = createServices({ config, clock: new AppClock(), database, dataDir: dataDir!, stripe, sandbox: true });
  await services.views.current();
  const replayedMs = performance.now();
  await startServices(services);
  const readyMs = performance.now();
  const rssReadyMib = mib(process.memoryUsage().rss);
  await (await services.views.current()).scoreboard.board();
  const firstBoardMs = performance.now() - readyMs;
  const warmMs: number[] = [];
  for (let i = 0; i < WARM_READS; i++) {
    // One more entry: a new request's PROPOSED, as the inbox writes it.
    const request = { id: `warm-${process.pid}-${i}`, agent: 'support-bot', payment_intent: 'pi_warm', amount: 100, reason: '', flags: [] };
    const effectId = services.inbox.effectIdOf(request);
    await services.journal.append('PROPOSED', effectId, { agent: config.inboxName, lease: null, premises: {}, effect: { payment_intent: 'pi_warm', amount: 100 }, request, at_ms: Date.now() });
    const { scoreboard } = await services.views.current();
    const readMs = performance.now();
    await scoreboard.board();
    warmMs.push(performance.now() - readMs);
  }
  const entries = (await services.views.current()).seq;
  database.close();
  return {
    entries,
    open_s: (openedMs - startMs) / 1000,
    replay_s: (replayedMs - openedMs) / 1000,
    start_rest_s: (readyMs - replayedMs) / 1000,
    rebuild_s: (readyMs - startMs) / 1000,
    rss_ready_mib: rssReadyMib,
    first_board_ms: firstBoardMs,
    warm_board_ms: percentile(warmMs, 50),
    peak_rss_mib: peakRssMib(),
  };
}

async function cold(): Promise<Record<string, number>> {
  const opened = openDatabase(file!);
  const config = loadConfig(configPath);
  const journal = new SqliteJournal({ db: opened.db, wallClockMs: () => Date.now() });
  const loadStartMs = performance.now();
  const all: Entry[] = [];
  for (let after = 0; all.length < ENTRIES_MAX; ) {
    const page = await journal.scan(after, SCAN_PAGE);
    if (page.length === 0) break;
    for (const { seq, entry } of page) {
      after = seq;
      all.push(entry);
    }
  }
  const computeStartMs = performance.now();
  const board = computeScoreboard(all, config.inboxName);
  const computeMs = performance.now() - computeStartMs;
  opened.close();
  return { entries: all.length, requests: board.requests, load_ms: computeStartMs - loadStartMs, cold_ms: computeMs, peak_rss_mib: peakRssMib() };
}

const measured = mode === 'rebuild' ? await rebuild() : await cold();
process.stdout.write(`${JSON.stringify(measured)}\n`);
process.exit(0);
