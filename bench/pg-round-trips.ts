import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { buildServer } from '../scripts/build-server.ts';
import { createPaymentIntents, IntentPool, runRefundLoad } from './http.ts';
import { startBenchCluster } from './pg-cluster.ts';
import { COMPILED_ENTRY, type PgSite, unpacedConfig, writeKey } from './pg-http.ts';
import { type Started, startSandboxProcess, startServerProcess } from './processes.ts';

// What one routine refund asks of PostgreSQL: `tsx bench/pg-round-trips.ts [--servers 2]
// [--connections 32] [--seconds 15] [--pool-max 20] [--cpu-prof <dir>]`. Compiled servers on the bench's durable
// cluster with pg_stat_statements loaded; after a warm-up, the statements PostgreSQL ran (each one
// round trip, save a BEGIN sent with the statement after it), the pools' checkouts and waits, all
// divided by the refunds committed meanwhile. Background work (leases, the ticker) is counted too.

const arg = (name: string, fallback: string) => {
  const at = process.argv.indexOf(name);
  return at === -1 ? fallback : (process.argv[at + 1] ?? fallback);
};
const serverCount = Number(arg('--servers', '1'));
const lanes = Number(arg('--connections', '32'));
const seconds = Number(arg('--seconds', '15'));
const profDir = arg('--cpu-prof', '');
const poolMax = arg('--pool-max', '');

/** A counter or a summary's count in a Prometheus scrape, summed over the servers. */
async function scraped(servers: Started[], name: string): Promise<number> {
  const texts = await Promise.all(servers.map(async (s) => (await fetch(`${s.url}/metrics`)).text()));
  return texts.reduce((sum, text) => sum + Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? 0), 0);
}

async function main(): Promise<void> {
  await buildServer();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'interlock-round-trips-'));
  const cluster = await startBenchCluster(['shared_preload_libraries=pg_stat_statements', 'pg_stat_statements.track=all']);
  const sandbox = await startSandboxProcess();
  const servers: Started[] = [];
  try {
    const site: PgSite = { dir, cluster, sandboxUrl: sandbox.url, keyPath: writeKey(dir, 'keys'), database: await cluster.database('trips'), configPath: unpacedConfig(dir) };
    await cluster.psql('trips', 'CREATE EXTENSION pg_stat_statements');
    for (let i = 0; i < serverCount; i += 1) {
      servers.push(
        await startServerProcess({
          dataDir: path.join(dir, `s${i}`),
          sandboxUrl: site.sandboxUrl,
          configPath: site.configPath,
          entry: COMPILED_ENTRY,
          env: { DATABASE_URL: site.database.appUrl, DATABASE_MIGRATE_URL: site.database.ownerUrl, RECEIPT_KEY_PATH: site.keyPath, ...(poolMax === '' ? {} : { DATABASE_POOL_MAX: poolMax }) },
          ...(profDir === '' ? {} : { nodeArgs: ['--cpu-prof', '--cpu-prof-dir', profDir] }),
        }),
      );
    }
    const pools = await Promise.all(servers.map(async () => new IntentPool(await createPaymentIntents(site.sandboxUrl, lanes * 4), lanes)));
    const load = (ms: number, tag: string) => Promise.all(servers.map((s, i) => runRefundLoad(s.url, pools[i]!, { connections: lanes, durationMs: ms, tag: `${tag}-${i}` })));
    await load(2_000, 'warm');
    const committed = async () => Number(await cluster.psql('trips', "SELECT count(*) FROM entries WHERE kind = 'COMMITTED'"));
    const before = { refunds: await committed(), checkouts: await scraped(servers, 'interlock_pg_checkouts_total'), waits: await scraped(servers, 'interlock_pg_pool_wait_seconds_count') };
    await cluster.psql('trips', 'SELECT pg_stat_statements_reset()');
    const started = performance.now();
    await load(seconds * 1000, 'run');
    const elapsedS = (performance.now() - started) / 1000;
    const refunds = (await committed()) - before.refunds;
    const checkouts = (await scraped(servers, 'interlock_pg_checkouts_total')) - before.checkouts;
    const waits = (await scraped(servers, 'interlock_pg_pool_wait_seconds_count')) - before.waits;
    const texts = await Promise.all(servers.map(async (s) => (await fetch(`${s.url}/metrics`)).text()));
    const holds = (q: string) => texts.map((t) => Number(new RegExp(`^interlock_pg_append_lock_hold_seconds\\{quantile="${q}"\\} (\\S+)$`, 'm').exec(t)?.[1] ?? Number.NaN) * 1000);
    const rows = await cluster.psql(
      'trips',
      "SELECT s.calls, regexp_replace(left(s.query, 110), '\\s+', ' ', 'g') FROM pg_stat_statements AS s JOIN pg_database AS d ON d.oid = s.dbid WHERE d.datname = 'trips' AND s.query NOT LIKE '%pg_stat_statements%' ORDER BY s.calls DESC",
    );
    const lines = rows.trim().split('\n').map((line) => line.split('|') as [string, string]);
    const total = lines.reduce((sum, [calls]) => sum + Number(calls), 0);
    const per = (n: number) => (refunds === 0 ? 'n/a' : (n / refunds).toFixed(2));
    console.log(`${serverCount} server(s), ${lanes} connections each, pool ${poolMax === '' ? 'default' : poolMax}, ${elapsedS.toFixed(1)} s, load average ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}`);
    console.log(`refunds committed ${refunds} (${(refunds / elapsedS).toFixed(1)}/s); per refund: statements ${per(total)}, checkouts ${per(checkouts)}; pool waits ${waits}`);
    console.log(`head row's lock held since start, p50 ${holds('0.5').map((ms) => ms.toFixed(1)).join(' / ')} ms, p99 ${holds('0.99').map((ms) => ms.toFixed(1)).join(' / ')} ms (per server)`);
    for (const [calls, query] of lines) console.log(`${per(Number(calls)).padStart(7)}  ${query}`);
  } finally {
    await Promise.all(servers.map((s) => s.stop()));
    await sandbox.stop();
    cluster.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

await main();
