import { appendFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Sandbox, startSandbox } from '../../server/sandbox/index.ts';
import { AGENT_TOKEN } from '../support/app-world.ts';
import { dropPgDatabase, emptyPgDatabase, type PgDatabase, postgresCluster, postgresOrSkip } from '../support/postgres.ts';
import { freePort, type ServerProcess, startServerProcess, writeReceiptKey, writeTestConfig } from '../support/server-process.ts';

// Two real servers on one PostgreSQL database, as behind a proxy: a failed login on one holds the
// name on the other, and an agent hammering both is allowed its configured rate and one burst in
// all, not once per server.

const available = postgresOrSkip('two servers on PostgreSQL (test/db/pg-servers-limits.test.ts)');

/** The agent's rate in this config: low, so a few seconds of hammering shows it. */
const RATE = { burst: 10, perSecond: 20 };

describe.skipIf(!available)('two servers on one PostgreSQL database (real processes)', () => {
  let database: PgDatabase;
  let dir: string;
  let sandbox: Sandbox | undefined;
  const servers: ServerProcess[] = [];

  beforeAll(async () => {
    database = await emptyPgDatabase('servers_limits');
    dir = mkdtempSync(join(tmpdir(), 'interlock-pg-servers-'));
    const config = writeTestConfig(dir, { unpaced: true });
    appendFileSync(config, `\nthrottle:\n  agent_token: { burst: ${RATE.burst}, per_second: ${RATE.perSecond} }\n  agent_address: { burst: 10000, per_second: 10000 }\n`);
    const key = writeReceiptKey(join(dir, 'receipt.pem'));
    // One Stripe sandbox for both, as one Stripe account.
    sandbox = await startSandbox({ port: 0 });
    const env = { STRIPE_SANDBOX_URL: sandbox.url, INTERLOCK_CONFIG: config, RECEIPT_KEY_PATH: key, DATABASE_URL: database.appUrl, DATABASE_MIGRATE_URL: database.ownerUrl, LOG_LEVEL: 'warn' };
    const ports = [await freePort(), await freePort()];
    await Promise.all(
      ports.map(async (port, i) => {
        servers[i] = await startServerProcess({ ...env, PORT: String(port), DATA_DIR: join(dir, `server-${i}`) }, { logs: true, readyTimeoutMs: 90_000 });
      }),
    );
  }, 180_000);

  afterAll(async () => {
    const started = servers.filter((server) => server !== undefined);
    for (const server of started) server.child.kill('SIGKILL');
    await Promise.all(started.map((server) => server.exited));
    await sandbox?.close();
    if (database !== undefined) await dropPgDatabase(database);
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  const logIn = async (server: ServerProcess, password: string) => {
    const response = await fetch(`${server.url}/api/session`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'ana', password }) });
    return { status: response.status, retryAfter: response.headers.get('retry-after') };
  };

  it('a failed login on one server makes the name wait on the other', async () => {
    const [a, b] = servers as [ServerProcess, ServerProcess];
    expect(await logIn(a, 'not the password')).toEqual({ status: 401, retryAfter: null });
    expect(await logIn(b, 'not the password')).toEqual({ status: 429, retryAfter: '1' });
  });

  it('an agent hammering both servers is allowed its rate and one burst in all', async () => {
    // Both servers count each other: two alive leases held, and a turn of each one's count after.
    const cluster = await postgresCluster();
    const live = async () => Number(await cluster.psql(database.name, "SELECT count(*) FROM work_leases WHERE name LIKE 'server-alive-%' AND holder <> '' AND expires_ms > floor(extract(epoch FROM clock_timestamp()) * 1000)"));
    const deadline = Date.now() + 30_000;
    while ((await live()) < 2 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 200));
    expect(await live()).toBe(2);
    await new Promise((resolve) => setTimeout(resolve, 2_500));

    let allowed = 0;
    let refused = 0;
    const startMs = performance.now();
    const endMs = startMs + 4_000;
    const loop = async (first: number) => {
      for (let n = first; performance.now() < endMs; n++) {
        const server = servers[n % 2]!;
        const response = await fetch(`${server.url}/v1/refunds/hammer-${n}`, { headers: { authorization: `Bearer ${AGENT_TOKEN}` } });
        await response.arrayBuffer();
        if (response.status === 429) refused += 1;
        else allowed += 1;
      }
    };
    await Promise.all(Array.from({ length: 8 }, (_, i) => loop(i)));
    const elapsedS = (performance.now() - startMs) / 1000;
    const most = RATE.perSecond * elapsedS + RATE.burst;
    expect(refused, `${allowed} allowed in ${elapsedS.toFixed(2)} s`).toBeGreaterThan(0);
    // Each server alone would allow the rate and a burst: twice this together.
    expect(allowed, `${allowed} allowed in ${elapsedS.toFixed(2)} s, at most ${most.toFixed(0)}`).toBeLessThanOrEqual(Math.ceil(most));
    // Not refused beyond it either: the servers count two, not more.
    expect(allowed).toBeGreaterThanOrEqual(Math.floor(RATE.perSecond * elapsedS * 0.5));
  }, 60_000);
});
