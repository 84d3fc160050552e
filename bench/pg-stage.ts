import { buildServer } from '../scripts/build-server.ts';
import type { HistorySize } from './history-args.ts';
import { startBenchCluster } from './pg-cluster.ts';
import { oneServerRep, type PgSite, twoServersRep, unpacedConfig, writeKey } from './pg-http.ts';
import { pgGrowth, startUpsAt } from './pg-history.ts';
import { startSandboxProcess } from './processes.ts';
import type { Plan, Samples } from './stages.ts';
import { say } from './stages.ts';
import { repeat } from './stats.ts';

/**
 * The `postgres` stage: Interlock on PostgreSQL 15, on a cluster of its own with PostgreSQL's
 * durable defaults (fsync and synchronous_commit on), measured as the SQLite stages measure it:
 * routine refunds over HTTP with one server and with two on one database, the head row's lock and
 * the pools' waits during the two-server load, an escalation asked on one server reaching an inbox
 * open on the other, the `sla-ticker` lease moving after its holder's SIGKILL, and start-up and
 * peak memory over journals of 100k entries (and 1M with `--sizes 100k,1m`) copied in by COPY.
 */
export async function postgresStage(plan: Plan, dir: string, sizes: readonly HistorySize[]): Promise<Samples> {
  const samples: Samples = {};
  await buildServer();
  const cluster = await startBenchCluster();
  const sandbox = await startSandboxProcess();
  try {
    const settings = await cluster.settings();
    say(`postgres: cluster ${Object.entries(settings).map(([k, v]) => `${k}=${v}`).join(', ')}`);
    if (settings.fsync !== 'on' || settings.synchronous_commit !== 'on') throw new Error('the bench cluster must run with fsync and synchronous_commit on');
    const base = { dir, cluster, sandboxUrl: sandbox.url, keyPath: writeKey(dir, 'pg-receipts') };
    await repeat(plan.reps, async (rep) => {
      const one: PgSite = { ...base, database: await cluster.database(`one_r${rep}`), configPath: unpacedConfig(dir) };
      await oneServerRep(plan, one, rep, samples);
      const two: PgSite = { ...base, database: await cluster.database(`two_r${rep}`), configPath: unpacedConfig(dir) };
      await twoServersRep(plan, two, rep, samples);
      for (const site of [one, two]) await cluster.psql('postgres', `DROP DATABASE ${site.database.name} WITH (FORCE)`);
    });
    for (const size of sizes) await startUpsAt(plan, base, size, samples);
    pgGrowth(samples);
  } finally {
    await sandbox.stop();
    cluster.stop();
  }
  return samples;
}
