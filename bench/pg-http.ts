import { generateKeyPairSync } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { UNPACED_STRIPE_CONFIG, writeStripeConfig } from './configs.ts';
import { createPaymentIntents, IntentPool, runRefundLoad } from './http.ts';
import { LoadClient, type LoadResult } from './http-load.ts';
import { closeFeed, logIn, openFeed, runVisible } from './live.ts';
import type { BenchCluster, BenchDatabase } from './pg-cluster.ts';
import { type Started, startServerProcess } from './processes.ts';
import { type Plan, push, type Samples, say } from './stages.ts';
import { percentile, sleep } from './stats.ts';

// The `postgres` stage over HTTP: servers as production runs them (the compiled server), each its
// own process on one PostgreSQL database, against the Stripe sandbox without limits.

/** The compiled server (made at the stage's start), as production runs it. */
export const COMPILED_ENTRY = 'dist/server/main.js';
/** Escalations timed from a POST on one server to its item on another's websocket, per repetition. */
const VISIBLE_REQUESTS_MAX = 200;
/** A lease not taken over within this long after its holder died is a failure, not a figure. */
const LEASE_MOVE_MAX_MS = 60_000;
/** How often the lease's holder is read while it moves. */
const LEASE_POLL_MS = 20;
/** Payments for a measured run, over what its warm-up's rate predicts. */
const POOL_HEADROOM = 1.5;
/** The rate a warm-up's payments are sized for. */
const WARM_PER_S = 300;

/** What every server of the stage shares: the database, the receipt key, the config and the sandbox. */
export interface PgSite {
  dir: string;
  cluster: BenchCluster;
  database: BenchDatabase;
  sandboxUrl: string;
  configPath: string;
  keyPath: string;
}

/** A receipt signing key for the servers of one database: every server on one journal signs with the same key. */
export function writeKey(dir: string, name: string): string {
  const file = path.join(dir, `${name}.pem`);
  fs.writeFileSync(file, generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o400 });
  return file;
}

/** The unpaced config of the HTTP runs: Interlock's Stripe budget far above the load. */
export function unpacedConfig(dir: string): string {
  return writeStripeConfig(dir, 'pg-unpaced', UNPACED_STRIPE_CONFIG);
}

/** A server of `site` with a data folder of its own, ready. */
export function startPgServer(site: PgSite, name: string, readyTimeoutMs?: number, readyPollMs?: number): Promise<Started> {
  return startServerProcess({
    dataDir: path.join(site.dir, name),
    sandboxUrl: site.sandboxUrl,
    configPath: site.configPath,
    entry: COMPILED_ENTRY,
    env: { DATABASE_URL: site.database.appUrl, DATABASE_MIGRATE_URL: site.database.ownerUrl, RECEIPT_KEY_PATH: site.keyPath },
    ...(readyTimeoutMs === undefined ? {} : { readyTimeoutMs }),
    ...(readyPollMs === undefined ? {} : { readyPollMs }),
  });
}

/**
 * Closed-loop routine refunds against every server at once, `connections` split among them, over
 * the longest run: the refunds committed meanwhile (COMMITTED entries written, whether the agent's
 * answer was 200 COMMITTED or, past the answer's time bound, 202 with the refund then committed),
 * and the requests answered 200 COMMITTED.
 */
async function loadAll(plan: Plan, site: PgSite, servers: Started[], durationMs: number, tag: string, expectedPerS: number): Promise<{ perS: number; answeredPerS: number; result: LoadResult }> {
  const sandboxUrl = site.sandboxUrl;
  const lanes = Math.max(1, Math.floor(plan.connections / servers.length));
  // A payment each refund, as the http stage sizes its pool: one refunded again and again would be escalated.
  const intents = Math.max(lanes * 4, Math.ceil(((durationMs / 1000) * expectedPerS * POOL_HEADROOM) / servers.length));
  const pools = await Promise.all(servers.map(async () => new IntentPool(await createPaymentIntents(sandboxUrl, intents), lanes)));
  const committedBefore = await committedCount(site);
  const results = await Promise.all(servers.map((server, i) => runRefundLoad(server.url, pools[i]!, { connections: lanes, durationMs, tag: `${tag}-s${i}` })));
  const committed = (await committedCount(site)) - committedBefore;
  const merged: LoadResult = { sent: 0, ok: 0, failures: {}, latenciesMs: [], elapsedMs: 0 };
  for (const r of results) {
    merged.sent += r.sent;
    merged.ok += r.ok;
    merged.latenciesMs.push(...r.latenciesMs);
    merged.elapsedMs = Math.max(merged.elapsedMs, r.elapsedMs);
    for (const [label, n] of Object.entries(r.failures)) merged.failures[label] = (merged.failures[label] ?? 0) + n;
  }
  return { perS: committed / (merged.elapsedMs / 1000), answeredPerS: merged.ok / (merged.elapsedMs / 1000), result: merged };
}

/** The p99 latency of a run's answers under `name`, or nothing when none was answered 200 COMMITTED. */
function p99Of(name: string, result: LoadResult): Record<string, number> {
  return result.latenciesMs.length === 0 ? {} : { [name]: percentile(result.latenciesMs, 99) };
}

/** Refunds committed in the database so far: its COMMITTED entries. */
async function committedCount(site: PgSite): Promise<number> {
  return Number((await site.cluster.psql(site.database.name, "SELECT count(*) FROM entries WHERE kind = 'COMMITTED'")).trim());
}

/** The quantile `q` of a summary in a Prometheus scrape, and its count. */
function summaryOf(text: string, name: string, q: string): { value: number; count: number } {
  const value = Number(new RegExp(`^${name}\\{quantile="${q}"\\} (\\S+)$`, 'm').exec(text)?.[1] ?? Number.NaN);
  const count = Number(new RegExp(`^${name}_count (\\S+)$`, 'm').exec(text)?.[1] ?? 0);
  return { value, count };
}

/** The append lock's hold and the pools' waits, as each server's /metrics tells them since its start. */
async function lockFigures(servers: Started[]): Promise<Record<string, number>> {
  const texts = await Promise.all(servers.map(async (s) => (await fetch(`${s.url}/metrics`)).text()));
  const hold = (q: string) => texts.map((t) => summaryOf(t, 'interlock_pg_append_lock_hold_seconds', q).value * 1000);
  const waits = texts.map((t) => summaryOf(t, 'interlock_pg_pool_wait_seconds', '0.99'));
  const waited = waits.reduce((sum, w) => sum + w.count, 0);
  return {
    pg_append_lock_hold_ms_p50: hold('0.5').reduce((a, b) => a + b, 0) / texts.length,
    pg_append_lock_hold_ms_p99: Math.max(...hold('0.99')),
    pg_pool_waits: waited,
    pg_pool_wait_ms_p99: waited === 0 ? 0 : Math.max(...waits.filter((w) => w.count > 0).map((w) => w.value * 1000)),
  };
}

const failuresOf = (r: LoadResult) => (Object.keys(r.failures).length === 0 ? 'none' : Object.entries(r.failures).map(([k, n]) => `${k} ×${n}`).join(', '));

/** One server on a fresh database: warm-up, then the measured closed loop. */
export async function oneServerRep(plan: Plan, site: PgSite, rep: number, samples: Samples): Promise<void> {
  const server = await startPgServer(site, `one-r${rep}`);
  try {
    const warm = await loadAll(plan, site, [server], plan.warmupMs, `pg1-warm${rep}`, WARM_PER_S);
    const { perS, answeredPerS, result } = await loadAll(plan, site, [server], plan.loadMs, `pg1-r${rep}`, Math.max(warm.perS, 50));
    say(`postgres one server rep ${rep}: ${Math.round(perS)} refunds committed/s, ${Math.round(answeredPerS)}/s answered 200 COMMITTED, p99 of those ${percentile(result.latenciesMs, 99).toFixed(0)} ms; other answers ${failuresOf(result)}`);
    push(samples, { pg_http_refunds_per_s_1_server: perS, pg_http_answered_per_s_1_server: answeredPerS, ...p99Of('pg_http_p99_ms_1_server', result) });
  } finally {
    await server.stop();
  }
}

/**
 * Two servers on a fresh database: warm-up, the measured closed loop split over both, the lock's
 * and pools' figures; then escalations asked on the first and timed to the second's websocket;
 * last, the holder of the `sla-ticker` lease SIGKILLed, and the time until the other holds it.
 */
export async function twoServersRep(plan: Plan, site: PgSite, rep: number, samples: Samples): Promise<void> {
  const servers: Started[] = [];
  try {
    servers.push(await startPgServer(site, `two-r${rep}-a`));
    servers.push(await startPgServer(site, `two-r${rep}-b`));
    const warm = await loadAll(plan, site, servers, plan.warmupMs, `pg2-warm${rep}`, WARM_PER_S);
    const { perS, answeredPerS, result } = await loadAll(plan, site, servers, plan.loadMs, `pg2-r${rep}`, Math.max(warm.perS, 50));
    const locks = await lockFigures(servers);
    say(
      `postgres two servers rep ${rep}: ${Math.round(perS)} refunds committed/s, ${Math.round(answeredPerS)}/s answered 200 COMMITTED, p99 of those ${percentile(result.latenciesMs, 99).toFixed(0)} ms; other answers ${failuresOf(result)}; lock hold p50 ${locks.pg_append_lock_hold_ms_p50!.toFixed(2)} ms, p99 ${locks.pg_append_lock_hold_ms_p99!.toFixed(2)} ms; ${locks.pg_pool_waits} pool waits, p99 ${locks.pg_pool_wait_ms_p99!.toFixed(1)} ms`,
    );
    push(samples, { pg_http_refunds_per_s_2_servers: perS, pg_http_answered_per_s_2_servers: answeredPerS, ...p99Of('pg_http_p99_ms_2_servers', result), pg_http_failed_2_servers: result.sent - result.ok, ...locks });
    await visibleAcross(plan, site, servers[0]!, servers[1]!, rep, samples);
    push(samples, { pg_lease_move_s: await leaseMove(site, servers) });
  } finally {
    await Promise.all(servers.map((s) => s.stop()));
  }
}

/** Escalations POSTed to `a`, each timed until its item arrives on an approver's websocket open on `b`. */
async function visibleAcross(plan: Plan, site: PgSite, a: Started, b: Started, rep: number, samples: Samples): Promise<void> {
  const client = new LoadClient(b.url, 2);
  const session = await logIn(client, 'ana');
  client.close();
  const feed = await openFeed(b.url, session);
  try {
    const requests = Math.min(plan.visibleRequests, VISIBLE_REQUESTS_MAX);
    const intents = await createPaymentIntents(site.sandboxUrl, requests);
    const run = await runVisible(a.url, feed, intents, { requests, concurrency: plan.visibleConcurrency, deadlineMs: plan.visibleMaxMs, tag: `pg-r${rep}` });
    say(`postgres inbox across servers rep ${rep}: p50 ${run.p50Ms.toFixed(0)} ms, p95 ${run.p95Ms.toFixed(0)} ms, missing ${run.missing}, failed ${run.failed}`);
    push(samples, { pg_inbox_across_ms_p95: run.p95Ms, pg_inbox_across_ms_p50: run.p50Ms, pg_inbox_across_missing: run.missing + run.failed });
  } finally {
    closeFeed(feed);
  }
}

/** The `sla-ticker` lease's holder now, as `host:pid:id`, or null while nobody holds it. */
async function tickerHolder(site: PgSite): Promise<string | null> {
  const holder = (await site.cluster.psql(site.database.name, "SELECT holder FROM work_leases WHERE name = 'sla-ticker'")).trim();
  return holder === '' ? null : holder;
}

/** SIGKILL the server holding the `sla-ticker` lease; seconds until another server holds it. */
async function leaseMove(site: PgSite, servers: Started[]): Promise<number> {
  const pidOf = (holder: string | null) => Number(holder?.split(':')[1] ?? Number.NaN);
  let holder = await tickerHolder(site);
  for (let waited = 0; !servers.some((s) => s.child.pid === pidOf(holder)) && waited < LEASE_MOVE_MAX_MS; waited += 100) {
    await sleep(100);
    holder = await tickerHolder(site);
  }
  const victim = servers.find((s) => s.child.pid === pidOf(holder));
  if (victim === undefined) throw new Error(`no server of the stage holds the sla-ticker lease (${holder})`);
  const killedMs = performance.now();
  victim.child.kill('SIGKILL');
  while (performance.now() - killedMs < LEASE_MOVE_MAX_MS) {
    const now = await tickerHolder(site);
    if (now !== null && now !== holder && servers.some((s) => s !== victim && s.child.pid === pidOf(now))) {
      const seconds = (performance.now() - killedMs) / 1000;
      say(`postgres lease: sla-ticker moved ${seconds.toFixed(2)} s after its holder was SIGKILLed`);
      return seconds;
    }
    await sleep(LEASE_POLL_MS);
  }
  throw new Error(`the sla-ticker lease did not move within ${LEASE_MOVE_MAX_MS / 1000} s of its holder's SIGKILL`);
}
