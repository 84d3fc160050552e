import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { PID_FILE } from '../server/app/reload-files.ts';
import type { HistorySize } from './history-args.ts';
import { peakRssMib, readAsPerson, type OldRequest } from './history-reads.ts';
import { login } from './ledger.ts';
import { copyJournalIn, sqliteJournalOf } from './pg-journals.ts';
import { type PgSite, startPgServer } from './pg-http.ts';
import type { Started } from './processes.ts';
import { CONFIG_PATH, type Plan, push, type Samples, say } from './stages.ts';
import { repeat, sleep } from './stats.ts';
import type { BenchCluster } from './pg-cluster.ts';

// The `postgres` stage's start-ups: a server over a PostgreSQL database holding a journal of 100k
// (or 1M) entries, its derived tables built by an earlier start, as the history stage measures a
// server over SQLite journals of the same sizes.

/** A start over a large journal replays it first: the first start builds every derived table. */
const READY_TIMEOUT_MS = 60 * 60_000;
/** `/readyz` is asked this often while a start-up is timed. */
const READY_POLL_MS = 10;

/** How long a ready server may take to finish starting (its background work begun) before it is stopped anyway. */
const STARTED_WAIT_MS = 120_000;

/**
 * SIGTERM and a clean exit, or the stage fails: a start timed after it must follow a clean stop.
 * A server answers SIGTERM gracefully only once its start is over, some time after /readyz says
 * ready (the background work begun), which its pid file in the data folder tells.
 */
async function stopCleanly(server: Started, dataDir: string): Promise<void> {
  const pidFile = path.join(dataDir, PID_FILE);
  const untilMs = performance.now() + STARTED_WAIT_MS;
  while (!fs.existsSync(pidFile) && performance.now() < untilMs) await sleep(50);
  const how = await server.stop();
  if (how !== '0') throw new Error(`the server did not stop cleanly: it ended ${how}: ${server.stderr().trim().split('\n').slice(-3).join(' / ')}`);
}

async function timedStart(site: PgSite, name: string): Promise<{ seconds: number; server: Started }> {
  const startMs = performance.now();
  const server = await startPgServer(site, name, READY_TIMEOUT_MS, READY_POLL_MS);
  return { seconds: (performance.now() - startMs) / 1000, server };
}

/** Up to `count` requests at random in the database's journal: their effect id and the id their agent asked with. */
async function randomRequests(cluster: BenchCluster, database: string, count: number): Promise<OldRequest[]> {
  const rows = await cluster.psql(database, `SELECT effect_id, body::json #>> '{request,id}' FROM entries WHERE kind = 'PROPOSED' ORDER BY random() LIMIT ${count}`);
  return rows
    .trim()
    .split('\n')
    .filter((line) => line.includes('|'))
    .map((line) => {
      const [effectId, requestId] = line.split('|') as [string, string];
      return { effectId, requestId };
    })
    .filter((one) => one.requestId !== '');
}

/** Every start-up figure of one size, over a database of its own. */
export async function startUpsAt(plan: Plan, base: Omit<PgSite, 'database' | 'configPath'>, size: HistorySize, samples: Samples): Promise<void> {
  const file = await sqliteJournalOf(plan, base.dir, size);
  const database = await base.cluster.database(`history_${size}`);
  const copied = await copyJournalIn(base.cluster, database.name, file);
  say(`postgres ${size}: ${copied.entries.toLocaleString('en-US')} entries and seals of ${file} copied in by COPY in ${copied.seconds.toFixed(1)} s, counts and last global hash checked`);
  const site: PgSite = { ...base, database, configPath: CONFIG_PATH };
  // The first start checks every entry against its seals (the copy's verification) and builds the derived tables.
  const first = await timedStart(site, `history-${size}`);
  say(`postgres ${size}: first start (every entry checked, tables built) in ${first.seconds.toFixed(1)} s`);
  await stopCleanly(first.server, path.join(base.dir, `history-${size}`));
  push(samples, { [`pg_journal_copy_s_${size}`]: copied.seconds, [`pg_first_start_s_${size}`]: first.seconds });
  const old = await randomRequests(base.cluster, database.name, plan.historyReads);
  await repeat(plan.reps, async (rep) => {
    const { seconds, server } = await timedStart(site, `history-${size}`);
    let pages: Awaited<ReturnType<typeof readAsPerson>>;
    try {
      pages = await readAsPerson(server.url, await login(server.url), old);
    } catch (error) {
      // The reads' failure is the news, not how the server then stopped.
      await server.stop();
      throw error;
    }
    const rss = peakRssMib(server.child.pid!);
    await stopCleanly(server, path.join(base.dir, `history-${size}`));
    say(`postgres ${size} rep ${rep}: ready in ${seconds.toFixed(2)} s; first pages inbox ${pages.inboxMs.toFixed(0)} ms, scoreboard ${pages.scoreboardMs.toFixed(0)} ms, ledger ${pages.ledgerMs.toFixed(0)} ms; ${pages.itemsRead} old reads; peak rss ${rss.toFixed(0)} MiB`);
    push(samples, { [`pg_start_up_s_${size}`]: seconds, [`pg_rss_mib_${size}`]: rss, [`pg_ledger_first_page_ms_${size}`]: pages.ledgerMs });
  });
  await base.cluster.psql('postgres', `DROP DATABASE ${database.name} WITH (FORCE)`);
}

/** How start-up and memory grow from 100k to 1M entries, repetition by repetition, when both were measured. */
export function pgGrowth(samples: Samples): void {
  const pairs = (name: string) => (samples[`${name}_100k`] ?? []).map((a, i) => [a, samples[`${name}_1m`]?.[i]] as const).filter(([, b]) => b !== undefined);
  if (pairs('pg_rss_mib').length === 0) return;
  samples.pg_rss_growth_1m_over_100k = pairs('pg_rss_mib').map(([a, b]) => b! / a);
  samples.pg_start_up_growth_1m_over_100k = pairs('pg_start_up_s').map(([a, b]) => b! / a);
}
