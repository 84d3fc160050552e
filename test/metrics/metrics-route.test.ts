import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AppWorld, buildAppWorld, testConfig } from '../support/app-world.ts';

const TOKEN = 'metrics-scraper-token-1';
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** One series' value from Prometheus' text format, or null when the series is absent. */
function seriesValue(text: string, series: string): number | null {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? null : Number(line.slice(series.length + 1));
}

describe('GET /metrics', () => {
  let world: AppWorld;
  beforeAll(async () => {
    world = await buildAppWorld({ config: testConfig({ metrics: { allowFrom: ['loopback', '10.1.0.0/16'], tokenSha256: sha256(TOKEN) } }) });
  });
  afterAll(() => world.close());

  const scrape = (headers: Record<string, string> = {}, remoteAddress = '127.0.0.1') => world.app.inject({ method: 'GET', url: '/metrics', headers, remoteAddress });

  it('answers Prometheus text to loopback, to an allowed range, and to the token from anywhere', async () => {
    for (const [headers, address] of [
      [{}, '127.0.0.1'],
      [{}, '::1'],
      [{}, '10.1.2.3'],
      [{ authorization: `Bearer ${TOKEN}` }, '203.0.113.9'],
    ] as const) {
      const response = await scrape(headers, address);
      expect(response.statusCode, address).toBe(200);
      expect(response.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
      expect(response.body).toContain('# TYPE interlock_queue_items gauge');
    }
  });

  it('refuses any other address without the token, in the contract shape', async () => {
    for (const headers of [{}, { authorization: 'Bearer not-the-metrics-token' }] as Array<Record<string, string>>) {
      const response = await scrape(headers, '203.0.113.9');
      expect(response.statusCode).toBe(401);
      expect(response.json().error.code).toBe('unauthorized');
    }
  });

  it('refuses a scrape a proxy it does not trust forwarded from loopback: the address is the proxy\'s, not the scraper\'s', async () => {
    // Without trust_proxy, a proxy on the same machine makes every client 127.0.0.1.
    for (const headers of [{ 'x-forwarded-for': '203.0.113.9' }, { forwarded: 'for=203.0.113.9' }] as Array<Record<string, string>>) {
      const response = await scrape(headers, '127.0.0.1');
      expect(response.statusCode, JSON.stringify(headers)).toBe(401);
    }
    // The token is good from anywhere, forwarded or not.
    expect((await scrape({ 'x-forwarded-for': '203.0.113.9', authorization: `Bearer ${TOKEN}` }, '127.0.0.1')).statusCode).toBe(200);
  });

  it('counts the queue by group, Stripe calls by endpoint, the journal, and latency by route pattern', async () => {
    const pi = await world.payment(100_000);
    const routine = await world.agent('POST', '/v1/refunds', { request_id: 'metrics-routine', payment_intent: pi, amount: 1_000 });
    expect(routine.json().status).toBe('COMMITTED');
    const person = await world.agent('POST', '/v1/refunds', { request_id: 'metrics-person', payment_intent: pi, amount: 9_000 });
    expect(person.json().status).toBe('QUEUED');
    await world.agent('GET', '/v1/refunds/metrics-person');
    const text = (await scrape()).body;
    const groups = Object.keys(world.services.config.groups);
    const queued = groups.map((group) => seriesValue(text, `interlock_queue_items{group="${group}"}`) ?? Number.NaN);
    expect(queued.reduce((a, b) => a + b, 0)).toBe(1);
    expect(seriesValue(text, 'interlock_stripe_calls_total{endpoint="POST /v1/refunds"}')).toBe(1);
    expect(seriesValue(text, 'interlock_sends_in_flight')).toBe(0);
    expect(seriesValue(text, 'interlock_ambiguous_items')).toBe(0);
    expect(seriesValue(text, 'interlock_journal_entries')).toBe(await world.entryCount());
    expect(seriesValue(text, 'interlock_views_lag_entries')).toBe(0);
    expect(seriesValue(text, 'interlock_journal_available')).toBe(1);
    // The unpaced test budget: 10,000 calls a second, two of them held for their second after the answer.
    expect(seriesValue(text, 'interlock_stripe_budget_calls_per_second{scope="all"}')).toBe(10_000);
    expect(seriesValue(text, 'interlock_stripe_budget_left')).toBe(10_000 - (seriesValue(text, 'interlock_stripe_budget_held') ?? Number.NaN));
    // The route's pattern, never the raw URL with the request id in it.
    expect(text).toContain('interlock_http_request_duration_seconds_count{route="/v1/refunds/:request_id",method="GET",status_code="202"} 1');
    expect(text).not.toContain('metrics-person"');
    // The process's own figures.
    expect(text).toContain('process_cpu_user_seconds_total');
    expect(text).toContain('nodejs_eventloop_lag_seconds');
  });
});

describe('unknown paths outside the pages', () => {
  let world: AppWorld;
  let dist: string;
  beforeAll(async () => {
    dist = mkdtempSync(join(tmpdir(), 'interlock-web-'));
    writeFileSync(join(dist, 'index.html'), '<!doctype html><title>Interlock</title>');
    world = await buildAppWorld({ webDist: dist });
  });
  afterAll(async () => {
    await world.close();
    rmSync(dist, { recursive: true, force: true });
  });

  it('answer a JSON 404 under /api, /v1, /.well-known and /metrics, never the page', async () => {
    for (const url of ['/api/nope', '/v1/nope', '/.well-known/nope', '/metrics/nope', '/metrics/']) {
      const response = await world.app.inject({ method: 'GET', url });
      expect(response.statusCode, url).toBe(404);
      expect(response.headers['content-type'], url).toMatch(/^application\/json/);
      expect(response.json().error.code, url).toBe('not_found');
    }
    const page = await world.app.inject({ method: 'GET', url: '/inbox/anything' });
    expect(page.headers['content-type']).toMatch(/^text\/html/);
  });
});
