import { afterAll, describe, expect, it } from 'vitest';
import { SqliteJournal } from '../../db/journal-store.ts';
import { openDatabase } from '../../db/open.ts';
import type { Entry } from '../../shared/entries.ts';
import { LANDED_STATUSES } from '../../shared/statuses.ts';
import { startSandbox } from '../../server/sandbox/index.ts';
import { makeCrashDir } from '../support/crash-harness.ts';
import { clientFor, freePort, type ServerProcess, startServerProcess, writeTestConfig } from '../support/server-process.ts';

// A burst of 50 agents' routine refunds against a sandbox holding Stripe's test-mode limits, with
// the server killed (SIGKILL) mid-burst and started again on the same journal, a short claim TTL:
// every refund still lands exactly once, none is AMBIGUOUS or with a person, no answer is a 5xx, and
// the requests that were waiting their turn when it died are sent after the restart.

const AGENTS = 50;
const ASK_CENTS = 500;

let server: ServerProcess | null = null;
afterAll(() => {
  server?.child.kill('SIGKILL');
});

/** An agent as the HTTP API page tells one to behave: send; while not final, ask again after Retry-After; through a restart, send again. */
async function agentUntilFinal(url: () => string, requestId: string, paymentIntent: string, statuses: number[]): Promise<string> {
  const deadline = Date.now() + 120_000;
  let asked = false;
  for (;;) {
    if (Date.now() > deadline) throw new Error(`${requestId} not final in 120 s`);
    try {
      const client = clientFor(url());
      const answer = asked
        ? await client.agent('GET', `/v1/refunds/${requestId}`)
        : await client.agent('POST', '/v1/refunds', { request_id: requestId, payment_intent: paymentIntent, amount: ASK_CENTS });
      const code: number = answer.status;
      statuses.push(code);
      if (code === 200) return String(answer.body.status);
      // A request the server never journaled (it died first) is not found: send it again.
      asked = code === 202;
    } catch {
      // The server is down (killed, starting again): the same request again is always safe.
      asked = false;
    }
    await new Promise((r) => setTimeout(r, 300));
  }
}

describe('a burst of routine refunds through a SIGKILL', () => {
  it('50 at once, the server killed mid-burst and started again: each lands once, none with a person, no 5xx', async () => {
    const sandbox = await startSandbox({ port: 0, rateLimits: 'test', settle: 'at_create' });
    const dir = makeCrashDir('stripe-burst');
    const env = {
      PORT: String(await freePort()),
      DATA_DIR: dir,
      INTERLOCK_CONFIG: writeTestConfig(dir),
      STRIPE_SANDBOX_URL: sandbox.url,
      INTERLOCK_CLAIM_TTL_MS: '1000',
    };
    try {
      server = await startServerProcess(env);
      const url = `http://127.0.0.1:${env.PORT}`;
      const payments = await Promise.all(Array.from({ length: AGENTS }, async () => (await sandbox.createPaymentIntent(10_000)).id));
      const statuses: number[] = [];
      const finals = Promise.all(payments.map((pi, i) => agentUntilFinal(() => url, `crash-burst-${i}`, pi, statuses)));
      // Mid-burst: some refunds sent, others still waiting their turn.
      while (sandbox.refunds().length < 15) await new Promise((r) => setTimeout(r, 20));
      server.child.kill('SIGKILL');
      expect(await server.exited).toBe('SIGKILL');
      const sentBeforeKill = sandbox.refunds().length;
      expect(sentBeforeKill).toBeLessThan(AGENTS);
      server = await startServerProcess(env);
      const settled = await finals;
      // Sent once, whichever way the agent heard it (a resend after the restart hears DUPLICATE_IGNORED).
      expect(settled.filter((s) => !(LANDED_STATUSES as readonly string[]).includes(s))).toEqual([]);
      for (const pi of payments) expect(sandbox.refunds(pi).map((r) => r.amount)).toEqual([ASK_CENTS]);
      expect(statuses.filter((s) => s >= 500)).toEqual([]);
      expect(sandbox.requestCounts().total.rate_limited).toBe(0);
      const opened = openDatabase(`${dir}/interlock.sqlite`);
      try {
        const journal = new SqliteJournal({ db: opened.db, wallClockMs: () => Date.now() });
        const entries: Entry[] = (await journal.scan(0, 1_000_000)).map((s) => s.entry);
        expect(entries.filter((e) => e.kind === 'ESCALATED' || e.kind === 'AMBIGUOUS' || e.kind === 'REFUSED')).toEqual([]);
        expect(entries.filter((e) => e.kind === 'COMMITTED')).toHaveLength(AGENTS);
      } finally {
        opened.close();
      }
    } finally {
      server?.child.kill('SIGKILL');
      server = null;
      await sandbox.close();
    }
  }, 180_000);
});
