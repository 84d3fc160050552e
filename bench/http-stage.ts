import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import Database from 'better-sqlite3';
import { SIGNING_KEY_FILE } from '../server/receipts/keys.ts';
import { UNPACED_STRIPE_CONFIG, writeStripeConfig } from './configs.ts';
import { cpuSecondsOf, createPaymentIntents, IntentPool, runFixedRate, runRefundLoad } from './http.ts';
import { LoadClient, type LoadResult } from './http-load.ts';
import { harvestTemplates, type Templates } from './journal-gen.ts';
import { closeFeed, decideSome, logIn, openFeed, runVisible } from './live.ts';
import { startSandboxProcess, startServerProcess, type Started } from './processes.ts';
import { type Plan, push, type Samples, say } from './stages.ts';
import { percentile, repeat, sleep } from './stats.ts';

/** The inbox name in interlock.yaml, which owns the chains the views show. */
const INBOX_NAME = 'inbox';
/** Routine refunds the pool of payment intents covers, over what the warm-up rate predicts. */
const POOL_HEADROOM = 1.5;
/** A process using less than this share of a core over a second is done with its backlog. */
const QUIET_CPU_SHARE = 0.05;
/** How long to wait for the sandbox to finish a backlog (after an overload) before going on. */
const QUIET_WAIT_MS_MAX = 120_000;
/** How often the idle server's /healthz is probed while it is watched. */
const PROBE_EVERY_MS = 100;

/** What the HTTP stage leaves for the stages after it. */
export interface HttpOutcome {
  samples: Samples;
  templates: Templates;
  /** A copy of the journal the last closed-loop run left. */
  journal: string;
  /** Figures that could not be measured, and why. */
  failures: Record<string, string>;
}

/** A load's figures under the names given for its rate, p50, p99 and failure count. */
function loadFigures(result: LoadResult, names: { rate: string; p50: string; p99: string; failed: string }): Record<string, number> {
  return {
    [names.rate]: result.ok / (result.elapsedMs / 1000),
    [names.p50]: percentile(result.latenciesMs, 50),
    [names.p99]: percentile(result.latenciesMs, 99),
    [names.failed]: Object.values(result.failures).reduce((a, b) => a + b, 0),
  };
}

function describeFailures(result: LoadResult): string {
  const entries = Object.entries(result.failures);
  return entries.length === 0 ? 'none' : entries.map(([label, n]) => `${label} ×${n}`).join(', ');
}

/** Entries in a journal another process has open. */
function countEntries(file: string): number {
  const db = new Database(file, { readonly: true });
  try {
    return db.prepare('SELECT count(*) FROM entries').pluck().get() as number;
  } finally {
    db.close();
  }
}

/** A consistent copy of a journal another process is writing (SQLite's online backup). */
async function copyLiveJournal(file: string, to: string): Promise<void> {
  const db = new Database(file, { readonly: true });
  try {
    await db.backup(to);
  } finally {
    db.close();
  }
  // The key its checkpoints are signed with goes with it: a server started over the copy with
  // another key refuses it (checkpoint_invalid).
  fs.copyFileSync(path.join(path.dirname(file), SIGNING_KEY_FILE), keyOfCopy(to));
}

/** Where copyLiveJournal put the signing key of the journal copied to `copy`. */
function keyOfCopy(copy: string): string {
  return `${copy}.${SIGNING_KEY_FILE}`;
}

/**
 * Wait until the sandbox used less than QUIET_CPU_SHARE of a core over a second: no Stripe call
 * or webhook is left from the load before. The server's own background work after a load is
 * measured separately (http_server_idle_cpu_share).
 */
export async function waitForQuiet(sandbox: Started): Promise<number> {
  const startMs = Date.now();
  let before = cpuSecondsOf(sandbox.child.pid);
  while (Date.now() - startMs < QUIET_WAIT_MS_MAX) {
    await sleep(1_000);
    const now = cpuSecondsOf(sandbox.child.pid);
    if (now - before < QUIET_CPU_SHARE) break;
    before = now;
  }
  return (Date.now() - startMs) / 1000;
}

/** With no request but a /healthz probe every PROBE_EVERY_MS: the server's CPU share of a core and the slowest probe. */
async function watchIdle(server: Started, ms: number): Promise<{ share: number; slowestMs: number }> {
  const client = new LoadClient(server.url, 1);
  const before = cpuSecondsOf(server.child.pid);
  const startMs = performance.now();
  let slowestMs = 0;
  try {
    while (performance.now() - startMs < ms) {
      const sentMs = performance.now();
      await client.request({ method: 'GET', path: '/healthz' });
      slowestMs = Math.max(slowestMs, performance.now() - sentMs);
      await sleep(PROBE_EVERY_MS);
    }
  } finally {
    client.close();
  }
  return { share: (cpuSecondsOf(server.child.pid) - before) / ((performance.now() - startMs) / 1000), slowestMs };
}

/** The config of every server of this stage: interlock.yaml with Interlock's Stripe budget far above the load. */
function unpacedConfig(dir: string): string {
  return writeStripeConfig(dir, 'unpaced', UNPACED_STRIPE_CONFIG);
}

/** Run `fn` against a fresh server process (an empty journal in `dir/name`), stopping it after. */
async function withServer<T>(dir: string, name: string, sandbox: Started, fn: (server: Started, journal: string) => Promise<T>): Promise<T> {
  const dataDir = path.join(dir, name);
  const server = await startServerProcess({ dataDir, sandboxUrl: sandbox.url, configPath: unpacedConfig(dir) });
  try {
    return await fn(server, path.join(dataDir, 'interlock.sqlite'));
  } finally {
    await server.stop();
  }
}

/** Warm a fresh server up, then the measured closed-loop run. */
async function closedLoopRep(plan: Plan, server: Started, sandbox: Started, rep: number, samples: Samples): Promise<void> {
  const warmPool = new IntentPool(await createPaymentIntents(sandbox.url, plan.connections * 4), plan.connections);
  const warm = await runRefundLoad(server.url, warmPool, { connections: plan.connections, durationMs: plan.warmupMs, tag: `warm${rep}` });
  const warmRate = warm.ok / (warm.elapsedMs / 1000);
  const needed = Math.ceil(Math.max(warmRate, 50) * (plan.loadMs / 1000) * POOL_HEADROOM);
  const pool = new IntentPool(await createPaymentIntents(sandbox.url, Math.max(needed, plan.connections * 2)), plan.connections);
  await waitForQuiet(sandbox);
  const cpuBefore = { server: cpuSecondsOf(server.child.pid), sandbox: cpuSecondsOf(sandbox.child.pid), bench: process.cpuUsage() };
  const result = await runRefundLoad(server.url, pool, { connections: plan.connections, durationMs: plan.loadMs, tag: `r${rep}` });
  const bench = process.cpuUsage(cpuBefore.bench);
  const perRefundMs = (seconds: number) => (1000 * seconds) / Math.max(1, result.ok);
  const figures = loadFigures(result, { rate: 'http_refunds_per_s', p50: 'http_p50_ms', p99: 'http_p99_ms', failed: 'http_refunds_failed' });
  say(
    `http rep ${rep}: warm-up ${Math.round(warmRate)}/s, then ${Math.round(figures.http_refunds_per_s!)} refunds/s, p50 ${figures.http_p50_ms!.toFixed(1)} ms, p99 ${figures.http_p99_ms!.toFixed(1)} ms; failures ${describeFailures(result)}`,
  );
  push(samples, {
    ...figures,
    http_server_cpu_ms_per_refund: perRefundMs(cpuSecondsOf(server.child.pid) - cpuBefore.server),
    http_sandbox_cpu_ms_per_refund: perRefundMs(cpuSecondsOf(sandbox.child.pid) - cpuBefore.sandbox),
    http_loadgen_cpu_ms_per_refund: perRefundMs((bench.user + bench.system) / 1e6),
  });
}

async function fixedRateRep(plan: Plan, server: Started, sandbox: Started, rep: number, samples: Samples): Promise<void> {
  const intents = await createPaymentIntents(sandbox.url, Math.ceil((plan.fixedRatePerS * plan.fixedMs) / 1000));
  await waitForQuiet(sandbox);
  const result = await runFixedRate(server.url, intents, { ratePerS: plan.fixedRatePerS, durationMs: plan.fixedMs, inFlightMax: plan.fixedInFlightMax, tag: `r${rep}` });
  const figures = loadFigures(result, { rate: 'http_fixed_per_s', p50: 'http_fixed_p50_ms', p99: 'http_p99_ms_at_1000', failed: 'http_fixed_failed' });
  say(`http fixed ${plan.fixedRatePerS}/s rep ${rep}: answered ${Math.round(figures.http_fixed_per_s!)}/s, p99 ${figures.http_p99_ms_at_1000!.toFixed(1)} ms; failures ${describeFailures(result)}`);
  push(samples, figures);
}

/** Escalations seen on an approver's websocket, then some decisions; returns the harvested templates. */
async function liveReps(plan: Plan, server: Started, sandbox: Started, journal: string, samples: Samples): Promise<Templates> {
  // A short routine load first, so the journal holds routine chains to copy as well.
  const pool = new IntentPool(await createPaymentIntents(sandbox.url, plan.connections * 4), plan.connections);
  await runRefundLoad(server.url, pool, { connections: plan.connections, durationMs: plan.warmupMs, tag: 'live-routine' });
  const client = new LoadClient(server.url, 2);
  const session = await logIn(client, 'ana');
  client.close();
  const feed = await openFeed(server.url, session);
  try {
    await repeat(plan.reps, async (rep) => {
      const intents = await createPaymentIntents(sandbox.url, plan.visibleRequests);
      await waitForQuiet(sandbox);
      const run = await runVisible(server.url, feed, intents, { requests: plan.visibleRequests, concurrency: plan.visibleConcurrency, deadlineMs: plan.visibleMaxMs, tag: `r${rep}` });
      say(`ws rep ${rep}: p95 ${run.p95Ms.toFixed(1)} ms, p50 ${run.p50Ms.toFixed(1)} ms, missing ${run.missing}, failed ${run.failed}`);
      push(samples, { ws_visible_ms_p95: run.p95Ms, ws_visible_ms_p50: run.p50Ms, ws_visible_missing: run.missing + run.failed });
    });
    await decideSome(server.url, session, feed, plan.decide);
  } finally {
    closeFeed(feed);
  }
  await waitForQuiet(sandbox);
  const templates = await harvestTemplates(journal, INBOX_NAME);
  say(`templates: ${Object.entries(templates).map(([k, v]) => `${k} ${v.length} (${v[0]?.length ?? 0} entries)`).join(', ')}`);
  return templates;
}

/**
 * Interlock over HTTP against a sandbox without limits, Interlock's own Stripe budget far above
 * the load, each part against a fresh server process (an empty journal) with the Stripe sandbox
 * in a process of its own: closed-loop routine refunds (and, after the last, the
 * server watched with no requests); escalations seen on an approver's websocket, then decisions,
 * whose journal gives the templates of the generated journals; last, a fixed rate, which
 * overloads the server on purpose, so its failure costs only its own figures.
 */
export async function httpStage(plan: Plan, dir: string): Promise<HttpOutcome> {
  const samples: Samples = {};
  const failures: Record<string, string> = {};
  const copied = path.join(dir, 'after-load.sqlite');
  const sandbox = await startSandboxProcess();
  try {
    await repeat(plan.reps, (rep) =>
      withServer(dir, `load-r${rep}`, sandbox, async (server, journal) => {
        await closedLoopRep(plan, server, sandbox, rep, samples);
        if (rep !== plan.reps - 1) return;
        await waitForQuiet(sandbox);
        const idle = await watchIdle(server, plan.idleMs);
        const entries = countEntries(journal);
        say(`http: with no requests the server used ${(100 * idle.share).toFixed(0)}% of a core, slowest /healthz ${idle.slowestMs.toFixed(0)} ms (journal of ${entries} entries)`);
        push(samples, { http_server_idle_cpu_share: idle.share, http_server_idle_healthz_max_ms: idle.slowestMs, http_server_journal_entries: entries });
        await copyLiveJournal(journal, copied);
      }),
    );
    const templates = await withServer(dir, 'live', sandbox, (server, journal) => liveReps(plan, server, sandbox, journal, samples));
    try {
      await repeat(plan.reps, (rep) => withServer(dir, `fixed-r${rep}`, sandbox, (server) => fixedRateRep(plan, server, sandbox, rep, samples)));
    } catch (error) {
      const why = `fixed-rate load failed: ${(error as Error).message.split('\n')[0]}`;
      say(why);
      for (const name of ['http_p99_ms_at_1000', 'http_fixed_per_s', 'http_fixed_p50_ms', 'http_fixed_failed']) failures[name] = why;
    }
    return { samples, templates, journal: copied, failures };
  } finally {
    await sandbox.stop();
  }
}

/**
 * Run `work` against a server started under `--cpu-prof` (profile written to `profDir`) and a
 * sandbox of its own, then stop both: the sandbox first, so no webhook arrives while the server
 * shuts down and writes its profile.
 */
async function withProfiledServer<T>(dir: string, dataDir: string, profDir: string, work: (server: Started, sandbox: Started) => Promise<T>): Promise<T> {
  const sandbox = await startSandboxProcess();
  let server: Started | undefined;
  let result: T;
  try {
    server = await startServerProcess({ dataDir, sandboxUrl: sandbox.url, configPath: unpacedConfig(dir), nodeArgs: ['--cpu-prof', '--cpu-prof-dir', profDir] });
    result = await work(server, sandbox);
  } catch (error) {
    await server?.stop();
    await sandbox.stop();
    throw error;
  }
  await sandbox.stop();
  const how = await server.stop();
  if (how !== '0') throw new Error(`the profiled server ended ${how}, so it wrote no profile`);
  return result;
}

/** Start a server under `--cpu-prof`, load it with routine refunds, stop it: its profile is in `profDir`. */
export async function profileServer(plan: Plan, dir: string, profDir: string): Promise<void> {
  await withProfiledServer(dir, path.join(dir, 'profiled-server'), profDir, async (server, sandbox) => {
    const pool = new IntentPool(await createPaymentIntents(sandbox.url, plan.connections * 40), plan.connections);
    await runRefundLoad(server.url, pool, { connections: plan.connections, durationMs: plan.profileLoadMs, tag: 'profile' });
  });
}

/**
 * Start a server under `--cpu-prof` over a copy of `journal` and send it nothing for
 * `plan.profileIdleMs`: what it does then is its background work. Returns its CPU share of a core.
 */
export async function profileIdleServer(plan: Plan, dir: string, journal: string, profDir: string): Promise<number> {
  const dataDir = path.join(dir, 'idle-server');
  fs.mkdirSync(dataDir, { recursive: true });
  fs.copyFileSync(journal, path.join(dataDir, 'interlock.sqlite'));
  fs.copyFileSync(keyOfCopy(journal), path.join(dataDir, SIGNING_KEY_FILE));
  return withProfiledServer(dir, dataDir, profDir, async (server) => {
    const before = cpuSecondsOf(server.child.pid);
    await sleep(plan.profileIdleMs);
    return (cpuSecondsOf(server.child.pid) - before) / (plan.profileIdleMs / 1000);
  });
}
