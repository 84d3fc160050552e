import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PLAIN_STATUSES, REFUSAL_CODES } from '../../shared/statuses.ts';
import { type AppWorld, buildAppWorld } from '../support/app-world.ts';

// What operators ask of /metrics beyond the log lines: refund requests by the status they reached,
// and how long Stripe takes to answer, by endpoint, measured where every Stripe call goes (the paced
// transport of the one Stripe budget), here against the sandbox through the real SDK.

/** One series' value from Prometheus' text format, or null when the series is absent. */
function seriesValue(text: string, series: string): number | null {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? null : Number(line.slice(series.length + 1));
}

describe('refund requests and Stripe latency in /metrics', () => {
  let world: AppWorld;
  beforeAll(async () => {
    world = await buildAppWorld();
  });
  afterAll(() => world.close());

  const scrape = async () => (await world.app.inject({ method: 'GET', url: '/metrics', remoteAddress: '127.0.0.1' })).body;

  it('interlock_refund_requests_total counts each status a request reaches, final or waiting, labelled from the closed list', async () => {
    const before = await scrape();
    // Every label of the closed list is there from the start, at 0; a send under way is no outcome.
    for (const status of [...PLAIN_STATUSES.filter((s) => s !== 'IN_FLIGHT'), ...REFUSAL_CODES.map((code) => `REFUSED:${code}`), 'UNRESOLVED']) {
      expect(seriesValue(before, `interlock_refund_requests_total{status="${status}"}`), status).toBe(0);
    }
    expect(before).not.toContain('status="IN_FLIGHT"');

    const pi = await world.payment(100_000);
    expect((await world.agent('POST', '/v1/refunds', { request_id: 'count-routine', payment_intent: pi, amount: 1_000 })).json().status).toBe('COMMITTED');
    expect((await world.agent('POST', '/v1/refunds', { request_id: 'count-person', payment_intent: pi, amount: 9_000 })).json().status).toBe('QUEUED');
    // Asked again, the same status is the same outcome: not counted twice.
    await world.agent('POST', '/v1/refunds', { request_id: 'count-routine', payment_intent: pi, amount: 1_000 });
    await world.services.views.current();
    const after = await scrape();
    expect(seriesValue(after, 'interlock_refund_requests_total{status="COMMITTED"}')).toBe(1);
    expect(seriesValue(after, 'interlock_refund_requests_total{status="QUEUED"}')).toBe(1);
    expect(seriesValue(after, 'interlock_refund_requests_total{status="REJECTED"}')).toBe(0);
  });

  it('interlock_stripe_request_duration_seconds times every Stripe call by endpoint and outcome', async () => {
    const pi = await world.payment(50_000);
    expect((await world.agent('POST', '/v1/refunds', { request_id: 'latency-1', payment_intent: pi, amount: 500 })).json().status).toBe('COMMITTED');
    const text = await scrape();
    const refunds = seriesValue(text, 'interlock_stripe_request_duration_seconds_count{endpoint="POST /v1/refunds",outcome="ok"}');
    // The same calls the budget counts: every one through the one transport.
    expect(refunds).toBe(seriesValue(text, 'interlock_stripe_calls_total{endpoint="POST /v1/refunds"}'));
    expect(refunds).toBeGreaterThanOrEqual(1);
    const reads = seriesValue(text, 'interlock_stripe_request_duration_seconds_count{endpoint="GET /v1/payment_intents/:id",outcome="ok"}');
    expect(reads).toBeGreaterThanOrEqual(1);
    const sum = seriesValue(text, 'interlock_stripe_request_duration_seconds_sum{endpoint="POST /v1/refunds",outcome="ok"}') ?? Number.NaN;
    expect(sum).toBeGreaterThan(0);
    expect(sum).toBeLessThan(30 * (refunds ?? 0));
    expect(text).toContain('interlock_stripe_request_duration_seconds_bucket{le="+Inf",endpoint="POST /v1/refunds",outcome="ok"}');
  });
});
