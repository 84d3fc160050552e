import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SqliteJournal } from '../../db/journal-store.ts';
import { openDatabase } from '../../db/open.ts';
import { startSandbox } from '../../server/sandbox/index.ts';
import { mostInAnyWindow } from '../support/sliding-window.ts';
import { clientFor, serversOnOneJournal, writeTestConfig } from '../support/server-process.ts';

// Processes sharing one journal share one Stripe budget: real OS processes on one SQLite file, as
// several servers run in production (each its own event loop, timers and connection, the file's
// locks taken across processes), against one sandbox holding Stripe's test-mode limits. Each
// holds slot rows for its share of the account's 20 a second (80% of 25); without them each held
// all 20, and four together started up to 80 a second.

const SERVERS = 4;
const REFUNDS_PER_SERVER = 25;
const PAID_CENTS = 10_000;
const ASK_CENTS = 500;
/** The shipped config's budget: 80% of test mode's 25 a second. */
const BUDGET_PER_SECOND = 20;

type Client = ReturnType<typeof clientFor>;

/** When each refund's COMMITTED was journaled, by effect id, read from the servers' shared file. */
async function journaledCommits(file: string): Promise<Map<string, number>> {
  const database = openDatabase(file);
  try {
    const journal = new SqliteJournal({ db: database.db, wallClockMs: () => Date.now() });
    const committed = new Map<string, number>();
    for (let after = 0; ; ) {
      const page = await journal.scan(after, 10_000);
      if (page.length === 0) return committed;
      for (const { seq, entry } of page) {
        if (entry.kind === 'COMMITTED') committed.set(entry.effect_id, entry.ts_ms);
        after = seq;
      }
    }
  } finally {
    database.close();
  }
}

/**
 * An agent as the HTTP API page tells one to behave: send, and until the answer is final ask again
 * (429: send again), a second apart, as the typed client's first backoff. Asked every 250 ms, the
 * hundred agents sent the servers 400 reads a second, and on a loaded machine the servers' CPU,
 * not the budget, set the pace (100 refunds in 45 s where the budget allows 10).
 */
async function refundUntilFinal(client: Client, requestId: string, paymentIntent: string): Promise<{ status: string; effectId: string }> {
  const body = { request_id: requestId, payment_intent: paymentIntent, amount: ASK_CENTS };
  let answer = await client.agent('POST', '/v1/refunds', body);
  for (let i = 0; i < 75; i++) {
    if (answer.status === 200) return { status: String(answer.body.status), effectId: String(answer.body.effect_id) };
    await new Promise((r) => setTimeout(r, 1_000));
    answer = answer.status === 429 ? await client.agent('POST', '/v1/refunds', body) : await client.agent('GET', `/v1/refunds/${requestId}`);
  }
  throw new Error(`${requestId} not final: ${JSON.stringify(answer)}`);
}

describe('processes sharing one journal share one Stripe budget', () => {
  const dir = mkdtempSync(join(tmpdir(), 'interlock-budget-'));
  const group = serversOnOneJournal(dir);
  afterAll(async () => {
    await group.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it(`${SERVERS} servers on one SQLite file, ${REFUNDS_PER_SERVER} routine refunds each at once: at most ${BUDGET_PER_SECOND} calls reach Stripe in any second, none is answered 429, and each server gets its share`, async () => {
    const sandbox = await startSandbox({ port: 0, rateLimits: 'test', settle: 'at_create' });
    try {
      const config = writeTestConfig(dir);
      const servers = await group.start(SERVERS, { INTERLOCK_CONFIG: config, STRIPE_SANDBOX_URL: sandbox.url });
      const payments = await Promise.all(Array.from({ length: SERVERS * REFUNDS_PER_SERVER }, async () => (await sandbox.createPaymentIntent(PAID_CENTS)).id));
      const clients = servers.map((s) => clientFor(s.url));
      sandbox.resetRequestCounts();
      const startedMs = Date.now();
      const finals = await Promise.all(payments.map((pi, i) => refundUntilFinal(clients[i % SERVERS]!, `shared-budget-${i}`, pi)));

      expect(finals.map((f) => f.status)).toEqual(Array(payments.length).fill('COMMITTED'));
      for (const pi of payments) expect(sandbox.refunds(pi).map((r) => r.amount)).toEqual([ASK_CENTS]);
      const counts = sandbox.requestCounts();
      // Every call Stripe saw, counted where Stripe counts it, in any sliding second: within the budget, and none refused.
      expect(counts.total.rate_limited).toBe(0);
      expect(counts.endpoints['POST /v1/refunds']?.through).toBe(payments.length);
      expect(mostInAnyWindow(counts.arrivals.map((a) => a.atMs))).toBeLessThanOrEqual(BUDGET_PER_SECOND);
      // Each server's share. The first server to ask holds the whole budget until the others ask,
      // then gives back what its calls no longer hold (a second and more): from when every server
      // had a refund done until the first had all of its own, each did about as many as the others.
      // Done when its COMMITTED was journaled, as the servers did it: the time an agent's read saw
      // it also held how late a loaded server answered that read.
      const committedMs = await journaledCommits(group.dbFile);
      const doneMs = (server: number) => finals.filter((_, i) => i % SERVERS === server).map((f) => committedMs.get(f.effectId)!);
      const servedFromMs = Math.max(...servers.map((_, s) => Math.min(...doneMs(s))));
      const servedUntilMs = Math.min(...servers.map((_, s) => Math.max(...doneMs(s))));
      expect(servedUntilMs - servedFromMs).toBeGreaterThan(2_000);
      const doneMeanwhile = servers.map((_, s) => doneMs(s).filter((ms) => ms >= servedFromMs && ms <= servedUntilMs).length);
      const mean = doneMeanwhile.reduce((a, b) => a + b, 0) / SERVERS;
      for (const done of doneMeanwhile) expect(done).toBeGreaterThanOrEqual(mean / 2);
      // And the whole took about what the account's 20 a second allow for every call, not a quarter of it.
      const calls = counts.total.through;
      expect((Date.now() - startedMs) / 1000).toBeGreaterThan(calls / BUDGET_PER_SECOND - 1);
    } finally {
      await sandbox.close();
    }
  }, 120_000);
});
