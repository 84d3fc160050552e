import { describe, expect, it } from 'vitest';
import type { Entry } from '../../shared/entries.ts';
import { startSandbox } from '../../server/sandbox/index.ts';
import { type AppWorld, buildAppWorld, testConfig } from '../support/app-world.ts';

// A burst of agents' routine refunds against a sandbox that enforces Stripe's test-mode limits
// (25 operations a second, 25 per endpoint): every refund lands exactly once, none is AMBIGUOUS
// or with a person, no answer is a 5xx, and the ledger says exactly what Stripe holds.

const PAID_CENTS = 10_000;
const ASK_CENTS = 500;

/** As the shipped config: 80% of test mode's limits. */
const PACED = testConfig({ stripe: { mode: 'sandbox', rateLimits: { share: 0.8, globalPerSecond: null, endpointPerSecond: null } } });

interface Answer {
  statusCode: number;
  status: string;
  retryAfterS: number | null;
}

/** An agent as the HTTP API page tells one to behave: send, and while the answer is not final, ask again after Retry-After. */
async function agentUntilFinal(world: AppWorld, requestId: string, paymentIntent: string, answers: Answer[]): Promise<string> {
  let response = await world.agent('POST', '/v1/refunds', { request_id: requestId, payment_intent: paymentIntent, amount: ASK_CENTS });
  for (let i = 0; i < 400; i++) {
    const retryAfter = response.headers['retry-after'];
    const answer = { statusCode: response.statusCode, status: String(response.json().status ?? response.json().error?.code), retryAfterS: retryAfter === undefined ? null : Number(retryAfter) };
    answers.push(answer);
    if (response.statusCode === 200) return answer.status;
    await new Promise((r) => setTimeout(r, Math.min(1_000, (answer.retryAfterS ?? 0.2) * 1000)));
    response = response.statusCode === 429 ? await world.agent('POST', '/v1/refunds', { request_id: requestId, payment_intent: paymentIntent, amount: ASK_CENTS }) : await world.agent('GET', `/v1/refunds/${encodeURIComponent(requestId)}`);
  }
  throw new Error(`${requestId} not final`);
}

describe('a burst of routine refunds against Stripe’s test-mode limits', () => {
  it('50 agents at once, each $5 on its own $100 payment: each lands once, none with a person, no 5xx, and nothing Stripe refuses for pace', async () => {
    const sandbox = await startSandbox({ rateLimits: 'test', settle: 'at_create' });
    const world = await buildAppWorld({ sandbox, config: PACED });
    try {
      const payments = await Promise.all(Array.from({ length: 50 }, () => world.payment(PAID_CENTS)));
      sandbox.resetRequestCounts();
      const answers: Answer[] = [];
      const startedMs = Date.now();
      const finals = await Promise.all(payments.map((pi, i) => agentUntilFinal(world, `burst-${i}`, pi, answers)));
      const settledS = (Date.now() - startedMs) / 1000;
      expect(finals).toEqual(Array(50).fill('COMMITTED'));
      for (const pi of payments) expect(sandbox.refunds(pi).map((r) => r.amount)).toEqual([ASK_CENTS]);
      // Nobody was answered 5xx, and the first answers came at once: final, or 202 waiting its turn.
      expect(answers.filter((a) => a.statusCode >= 500)).toEqual([]);
      const entries: Entry[] = (await world.services.journal.scan(0, 1_000_000)).map((s) => s.entry);
      expect(entries.filter((e) => e.kind === 'ESCALATED' || e.kind === 'AMBIGUOUS')).toEqual([]);
      expect(entries.filter((e) => e.kind === 'COMMITTED')).toHaveLength(50);
      // Paced: Stripe answered none of the calls 429. (Two calls a refund is counted by
      // calls-per-refund.test.ts and the bench; on a loaded machine a read can age past its reuse
      // and be made again, which is right, so here it is only a floor.)
      const counts = sandbox.requestCounts();
      expect(counts.total.rate_limited).toBe(0);
      expect(counts.endpoints['POST /v1/refunds']?.through).toBeGreaterThanOrEqual(50);
      expect(counts.endpoints['GET /v1/payment_intents/:id']?.through).toBeGreaterThanOrEqual(50);
      // At 20 calls a second, 100 calls take at least 4 s.
      expect(settledS).toBeGreaterThan(4);
      const fin = await world.login('fin');
      const ledger = (await world.as(fin, 'GET', '/api/ledger?limit=200')).json();
      expect(ledger.rows).toHaveLength(50);
      expect(new Set(ledger.rows.map((r: { payment_intent: string }) => r.payment_intent))).toEqual(new Set(payments));
      expect(ledger.rows.map((r: { amount_sent_minor: number }) => r.amount_sent_minor)).toEqual(Array(50).fill(ASK_CENTS));
    } finally {
      await world.close();
      await sandbox.close();
    }
  }, 60_000);
});
