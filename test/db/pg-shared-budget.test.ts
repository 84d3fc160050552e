import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { type Sandbox, startSandbox } from '../../server/sandbox/index.ts';
import { dropPgDatabase, emptyPgDatabase, type PgDatabase, postgresOrSkip } from '../support/postgres.ts';
import { clientFor, freePort, type ServerProcess, startServerProcess, writeReceiptKey, writeTestConfig } from '../support/server-process.ts';
import { mostInAnyWindow } from '../support/sliding-window.ts';

// Two real servers on one PostgreSQL database share one Stripe budget, as processes on one SQLite
// file do (test/stripe/shared-budget.test.ts): each holds rows of stripe_budget_slots for its share
// of the account's 20 a second (80% of test mode's 25), so a burst spread over both reaches the
// sandbox, which holds Stripe's test-mode limits and counts every request, at most 20 in any
// second. Without the shared slots each would allow itself all 20, 40 together.

const available = postgresOrSkip('two servers sharing the Stripe budget on PostgreSQL (test/db/pg-shared-budget.test.ts)');

const SERVERS = 2;
const REFUNDS_PER_SERVER = 20;
const PAID_CENTS = 10_000;
const ASK_CENTS = 500;
/** The shipped config's budget: 80% of test mode's 25 a second. */
const BUDGET_PER_SECOND = 20;

type Client = ReturnType<typeof clientFor>;

/** An agent as the HTTP API page tells one to behave: send, and until the answer is final ask again (429: send again). */
async function refundUntilFinal(client: Client, requestId: string, paymentIntent: string): Promise<string> {
  const body = { request_id: requestId, payment_intent: paymentIntent, amount: ASK_CENTS };
  let answer = await client.agent('POST', '/v1/refunds', body);
  for (let i = 0; i < 200; i++) {
    if (answer.status === 200) return String(answer.body.status);
    await new Promise((r) => setTimeout(r, 100));
    answer = answer.status === 429 ? await client.agent('POST', '/v1/refunds', body) : await client.agent('GET', `/v1/refunds/${requestId}`);
  }
  throw new Error(`${requestId} not final: ${JSON.stringify(answer)}`);
}

describe.skipIf(!available)('two servers on one PostgreSQL database share one Stripe budget (real processes)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'interlock-pg-budget-'));
  let database: PgDatabase | undefined;
  let sandbox: Sandbox | undefined;
  const servers: ServerProcess[] = [];

  afterAll(async () => {
    const started = servers.filter((server) => server !== undefined);
    for (const server of started) server.child.kill('SIGKILL');
    await Promise.all(started.map((server) => server.exited));
    await sandbox?.close();
    if (database !== undefined) await dropPgDatabase(database);
    rmSync(dir, { recursive: true, force: true });
  });

  it(`${REFUNDS_PER_SERVER} routine refunds on each of ${SERVERS} servers at once: at most ${BUDGET_PER_SECOND} calls reach Stripe in any second, none is answered 429, each refund made once`, async () => {
    database = await emptyPgDatabase('shared_budget');
    sandbox = await startSandbox({ port: 0, rateLimits: 'test', settle: 'at_create' });
    const env = {
      STRIPE_SANDBOX_URL: sandbox.url,
      INTERLOCK_CONFIG: writeTestConfig(dir),
      RECEIPT_KEY_PATH: writeReceiptKey(join(dir, 'receipt.pem')),
      DATABASE_URL: database.appUrl,
      DATABASE_MIGRATE_URL: database.ownerUrl,
    };
    const ports = await Promise.all(Array.from({ length: SERVERS }, () => freePort()));
    // One after the other: the first migrates the database, the second finds it migrated.
    for (const [i, port] of ports.entries()) servers[i] = await startServerProcess({ ...env, PORT: String(port), DATA_DIR: join(dir, `server-${i}`) }, { readyTimeoutMs: 90_000 });
    const payments = await Promise.all(Array.from({ length: SERVERS * REFUNDS_PER_SERVER }, async () => (await sandbox!.createPaymentIntent(PAID_CENTS)).id));
    const clients = servers.map((s) => clientFor(s.url));
    sandbox.resetRequestCounts();
    const finals = await Promise.all(payments.map((pi, i) => refundUntilFinal(clients[i % SERVERS]!, `pg-budget-${i}`, pi)));

    expect(finals).toEqual(Array(payments.length).fill('COMMITTED'));
    for (const pi of payments) expect(sandbox.refunds(pi).map((r) => r.amount)).toEqual([ASK_CENTS]);
    const counts = sandbox.requestCounts();
    expect(counts.total.rate_limited).toBe(0);
    expect(counts.endpoints['POST /v1/refunds']?.through).toBe(payments.length);
    // Every call the sandbox saw, in any sliding second, within the one budget of both servers.
    expect(mostInAnyWindow(counts.arrivals.map((a) => a.atMs))).toBeLessThanOrEqual(BUDGET_PER_SECOND);
  }, 120_000);
});
