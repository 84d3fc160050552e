// One start-up of Interlock over an existing journal, as `npm start` makes it, timed, in a process of its own
// so its memory is its own. Usage:
//   node --import tsx bench/rebuild-child.ts rebuild <journal> <config> <dataDir>
//   node --import tsx bench/rebuild-child.ts cold <journal> <config>
// Prints one JSON line with what it measured.
import fs from 'node:fs';
import { performance } from 'node:perf_hooks';
import { and, asc, gt, lte, sql } from 'drizzle-orm';
import { SqliteJournal } from '../db/journal-store.ts';
import { type OpenDatabase, openDatabase } from '../db/open.ts';
import { storageOver } from '../db/sqlite-storage.ts';
import { journalSeals } from '../db/schema.ts';
import type { Entry } from '../shared/entries.ts';
import { AppClock } from '../server/app/clock.ts';
import { loadConfig } from '../server/config/load.ts';
import { Checkpointer } from '../server/integrity/checkpoints.ts';
import { openMirror } from '../server/integrity/mirrors.ts';
import { buildInterlock } from '../server/app/interlock.ts';
import { globalHashOf } from '../server/journal/hash.ts';
import { computeScoreboard } from '../server/scoreboard/figures.ts';
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

/** Checkpoints signed after start-up, each after one more entry; the median is reported. */
const SIGN_REPS = 5;
/** Entries a page while the global chain is recomputed again, as the follower reads them. */
const CHAIN_PAGE = 1_000;

/** A log that says nothing: the bench's stdout is its JSON line. */
const quiet = { info: () => {}, warn: () => {} };

/**
 * The global chain as start-up recomputes it during the replay, timed alone over the same journal:
 * per page of 1,000 the seals are read as the store reads them (its drizzle query), and each
 * entry's global hash is recomputed with globalHashOf and compared with its seal. The entries'
 * own hashes are read first, untimed: the replay reads them anyway. Seconds.
 */
function globalChainRecomputeS(database: OpenDatabase): number {
  const hashes = database.sqlite.prepare<[number, number], [number, string]>('SELECT seq, hash FROM entries WHERE seq > ? ORDER BY seq LIMIT ?').raw(true);
  const seals = database.db
    .select()
    .from(journalSeals)
    .where(and(gt(journalSeals.seq, sql.placeholder('afterSeq')), lte(journalSeals.seq, sql.placeholder('throughSeq'))))
    .orderBy(asc(journalSeals.seq))
    .prepare();
  let timedMs = 0;
  let previous: string | null = null;
  for (let after = 0; ; ) {
    const page = hashes.all(after, CHAIN_PAGE);
    const last = page.at(-1);
    if (last === undefined) break;
    const startMs = performance.now();
    const sealed = seals.all({ afterSeq: after, throughSeq: last[0] });
    for (let i = 0; i < page.length; i++) {
      const [seq, hash] = page[i]!;
      const global = globalHashOf(previous, seq, hash);
      if (sealed[i]?.seq !== seq || sealed[i]?.globalHash !== global) throw new Error(`the global chain breaks at seq ${seq}`);
      previous = global;
    }
    timedMs += performance.now() - startMs;
    after = last[0];
  }
  return timedMs / 1000;
}

/**
 * One start-up the way `npm start` makes it (server/app/runtime.ts): open, buildInterlock, check()
 * (the integrity check: guards, seal check, the replay that verifies every entry and recomputes
 * the global chain, the hold against the newest checkpoint in the store and the file mirror, the
 * first checkpoint signed), start() (recovery and sweeps), ready.
 */
async function rebuild(): Promise<Record<string, number>> {
  const startMs = performance.now();
  const database = openDatabase(file!);
  const openedMs = performance.now();
  const loaded = loadConfig(configPath);
  // One file mirror beside the journal, as the integrity page advises: start-up reads it back, each checkpoint is appended to it.
  const config = { ...loaded, integrity: { ...loaded.integrity, mirrors: [{ kind: 'file' as const, path: `${file!}.mirror.jsonl` }] } };
  // Nothing here reaches Stripe: the journal's chains are all settled. A call would fail loudly.
  const stripe = createStripeClient('sk_test_bench_unreachable', { host: '127.0.0.1', port: 9, protocol: 'http' });
  const interlock = await buildInterlock({ config, clock: new AppClock(), storage: storageOver(database), dataDir: dataDir!, stripe, sandbox: true, webhookSecrets: ['whsec_bench_unused'], logger: false, background: false });
  const builtMs = performance.now();
  const { services } = interlock;
  const { views } = services;
  // The replay is the part of the check every start-up had before the integrity check: timed apart.
  const replayAtStart = views.replayAtStart.bind(views);
  let replayMs = Number.NaN;
  views.replayAtStart = async () => {
    const replayStartMs = performance.now();
    try {
      return await replayAtStart();
    } finally {
      replayMs = performance.now() - replayStartMs;
    }
  };
  await interlock.check();
  const checkedMs = performance.now();
  await interlock.start();
  const readyMs = performance.now();
  const rssReadyMib = mib(process.memoryUsage().rss);
  await (await views.current()).scoreboard.board();
  const firstBoardMs = performance.now() - readyMs;
  const warmMs: number[] = [];
  // One more entry: a new request's PROPOSED, as the inbox writes it.
  const appendOne = async (tag: string) => {
    const request = { id: `${tag}-${process.pid}`, agent: 'support-bot', payment_intent: 'pi_warm', amount: 100, reason: '', flags: [] };
    await services.journal.append('PROPOSED', services.inbox.effectIdOf(request), { agent: config.inboxName, lease: null, premises: {}, effect: { payment_intent: 'pi_warm', amount: 100 }, request, at_ms: Date.now() });
  };
  for (let i = 0; i < WARM_READS; i++) {
    await appendOne(`warm-${i}`);
    const { scoreboard } = await views.current();
    const readMs = performance.now();
    await scoreboard.board();
    warmMs.push(performance.now() - readMs);
  }
  const peakRss = peakRssMib();
  // The checkpoints, by the same code the server runs, over this journal and its file mirror:
  // the hold start-up made, again, then checkpoints signed, stored and appended to the mirror.
  const checkpointer = new Checkpointer({
    store: services.checkpoints,
    views,
    key: services.signingKey,
    mirrors: config.integrity.mirrors.map(openMirror),
    config: config.integrity,
    wallMs: () => Date.now(),
    log: quiet,
    databaseFile: database.file,
  });
  const head = views.head;
  if (head === null) throw new Error('the journal is empty');
  const holdStartMs = performance.now();
  await checkpointer.checkAtStart({ size: head.size, head: head.globalHash });
  const holdMs = performance.now() - holdStartMs;
  const signMs: number[] = [];
  for (let i = 0; i < SIGN_REPS; i++) {
    await appendOne(`sign-${i}`);
    await views.current();
    const signStartMs = performance.now();
    const signed = await checkpointer.sign(true);
    signMs.push(performance.now() - signStartMs);
    if (signed === null) throw new Error('no checkpoint was signed after the journal grew');
  }
  const globalChainS = globalChainRecomputeS(database);
  const entries = (await views.current()).seq;
  await interlock.close();
  database.close();
  const checkS = (checkedMs - builtMs) / 1000;
  const replayS = replayMs / 1000;
  return {
    entries,
    open_s: (openedMs - startMs) / 1000,
    build_s: (builtMs - openedMs) / 1000,
    check_s: checkS,
    replay_s: replayS,
    // Guards, seal check, head comparison, checkpoint hold and first checkpoint: the check outside the replay, as it ran.
    check_outside_replay_s: checkS - replayS,
    global_chain_s: globalChainS,
    integrity_s: checkS - replayS + globalChainS,
    start_rest_s: (readyMs - checkedMs) / 1000,
    rebuild_s: (readyMs - startMs) / 1000,
    rss_ready_mib: rssReadyMib,
    first_board_ms: firstBoardMs,
    warm_board_ms: percentile(warmMs, 50),
    peak_rss_mib: peakRss,
    checkpoint_hold_ms: holdMs,
    checkpoint_sign_ms: percentile(signMs, 50),
    checkpoint_every_entries: config.integrity.checkpointEveryEntries,
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
