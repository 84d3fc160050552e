import { createHmac } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChannels } from '../../server/outbox/channels.ts';
import type { Delivery, MessageContent, NotificationsConfig } from '../../server/outbox/types.ts';
import { verifyCallback } from '../../shared/client/index.ts';

// Slack, webhook and callback deliveries against a real HTTP server on loopback, which the config
// allows (the address guard's own refusals are in channels-guard.test.ts).

const SECRET = 'support-bot-callback-secret-0123';
const NOW_MS = Date.UTC(2026, 11, 3, 5, 40);
/** Short enough for a fast test, long enough for the "slow" answers to beat it. */
const TIMEOUT_MS = 400;

interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** Answers by path: the statuses a receiver can give, a redirect, a hang and slow answers. */
const ROUTES: Record<string, (res: ServerResponse) => void> = {
  '/ok': (res) => res.writeHead(200).end('ok'),
  '/created': (res) => res.writeHead(201).end(),
  '/broken': (res) => res.writeHead(500).end('upstream broke\nat line 2'),
  '/busy': (res) => res.writeHead(429, { 'retry-after': '30' }).end('slow down'),
  '/request-timeout': (res) => res.writeHead(408).end(),
  '/gone': (res) => res.writeHead(404).end('no such hook'),
  '/invalid': (res) => res.writeHead(400).end('invalid_payload'),
  '/moved': (res) => res.writeHead(302, { location: '/ok' }).end(),
  '/hang': () => {},
  '/slow': (res) => setTimeout(() => res.writeHead(200).end('ok'), 150),
  '/slow-body': (res) => res.writeHead(200).write('a start, and never an end'),
  '/slow-error-body': (res) => res.writeHead(503).write('overloaded, and never an end'),
};

let server: Server;
let base: string;
const received: Received[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      received.push({ path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      (ROUTES[req.url ?? ''] ?? ((r: ServerResponse) => r.writeHead(404).end()))(res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

function buildConfig(): NotificationsConfig {
  return { publicUrl: null, reminderAtShare: null, smtp: null, people: {}, groups: {}, agents: {}, callbackAllowPrivate: ['127.0.0.1'] };
}

function buildContent(overrides: Partial<MessageContent> = {}): MessageContent {
  return {
    event: 'escalated',
    effect_id: '3f2a9c1d7e4b',
    request_id: 'case-4471',
    agent: 'support-bot',
    amount: 8_000,
    currency: 'usd',
    why: 'a rule wants a person to decide',
    reason: 'hi <!channel> <@U1> <http://x|y> & more',
    group: 'ap-leads',
    level: 0,
    due_ms: NOW_MS + 3_600_000,
    link: 'https://interlock.example.com/items/3f2a9c1d7e4b',
    ...overrides,
  };
}

const ANSWER = { request_id: 'case-4471', effect_id: '3f2a9c1d7e4b', status: 'COMMITTED', why: 'the refund was sent to Stripe once', refund: 're_1', changes: [], repairs: [], receipt: '/v1/receipts/3f2a9c1d7e4b' };

const slack = (path: string, id = 'a1b2c3d4e5f6'): Delivery => ({ id, recipient: { kind: 'person', name: 'ana' }, channel: { kind: 'slack', url: `${base}${path}` }, content: buildContent() });
const webhook = (path: string): Delivery => ({ id: 'b2c3d4e5f6a1', recipient: { kind: 'group', name: 'ap-leads' }, channel: { kind: 'webhook', url: `${base}${path}`, secret: SECRET }, content: buildContent() });
const callback = (path: string): Delivery => ({
  id: 'c3d4e5f6a1b2',
  recipient: { kind: 'agent', name: 'support-bot' },
  channel: { kind: 'callback', url: `${base}${path}`, secret: SECRET },
  content: buildContent({ event: 'final', body: ANSWER }),
});

const channels = createChannels(buildConfig(), { timeoutMs: TIMEOUT_MS, clock: { nowMs: () => NOW_MS, wallMs: Date.now } });
const never = new AbortController().signal;
const lastAt = (path: string) => received.filter((r) => r.path === path).at(-1)!;

describe('Slack', () => {
  it('posts {text} in mrkdwn with Interlock-Message-Id, agent text escaped as Slack requires', async () => {
    expect(await channels.deliver(slack('/ok'), never)).toEqual({ ok: true, status: 200, detail: `200 from ${new URL(base).host}` });
    const got = lastAt('/ok');
    expect(got.headers['interlock-message-id']).toBe('a1b2c3d4e5f6');
    expect(got.headers['content-type']).toBe('application/json');
    const { text } = JSON.parse(got.body) as { text: string };
    expect(text).toContain('hi &lt;!channel&gt; &lt;@U1&gt; &lt;http://x|y&gt; &amp; more');
    expect(text).toContain('*Deadline:* 2026-12-03 06:40 UTC (in 1h)');
    expect(text).not.toMatch(/<[!@]/);
  });

  it('refuses a message id that cannot travel in a header, without sending', async () => {
    const before = received.length;
    const outcome = await channels.deliver(slack('/ok', 'x\r\nEvil: 1'), never);
    expect(outcome).toMatchObject({ ok: false, retryable: false });
    expect(received.length).toBe(before);
  });
});

describe('answers and what they come to', () => {
  const host = () => new URL(base).host;
  it.each([
    ['/created', { ok: true, status: 201 }],
    ['/broken', { ok: false, status: 500, retryable: true, error: `500 from ${'HOST'}: upstream broke at line 2` }],
    ['/busy', { ok: false, status: 429, retryable: true }],
    ['/request-timeout', { ok: false, status: 408, retryable: true }],
    ['/gone', { ok: false, status: 404, retryable: false, error: `404 from ${'HOST'}: no such hook` }],
    ['/invalid', { ok: false, status: 400, retryable: false }],
    ['/moved', { ok: false, status: 302, retryable: false, error: `302 redirect from ${'HOST'} to ${'HOST'}; redirects are not followed` }],
  ])('%s: %o', async (path, expected) => {
    const outcome = await channels.deliver(webhook(path), never);
    const withHost = 'error' in expected ? { ...expected, error: expected.error.replaceAll('HOST', host()) } : expected;
    expect(outcome).toMatchObject(withHost);
  });

  it('does not follow a redirect', async () => {
    const okBefore = received.filter((r) => r.path === '/ok').length;
    await channels.deliver(webhook('/moved'), never);
    expect(received.filter((r) => r.path === '/ok').length).toBe(okBefore);
  });

  it('gives up on an answer that never comes at its own timeout, worth a retry', async () => {
    const started = performance.now();
    const outcome = await channels.deliver(webhook('/hang'), never);
    expect(outcome).toEqual({ ok: false, status: null, error: `no answer from ${host()} within ${TIMEOUT_MS} ms`, retryable: true });
    expect(performance.now() - started).toBeGreaterThanOrEqual(TIMEOUT_MS - 5);
    expect(performance.now() - started).toBeLessThan(TIMEOUT_MS + 300);
  });

  it('stops when the caller’s signal does, before its own timeout', async () => {
    const slow = createChannels(buildConfig());
    const started = performance.now();
    const outcome = await slow.deliver(webhook('/hang'), AbortSignal.timeout(100));
    expect(outcome).toMatchObject({ ok: false, status: null, retryable: true });
    expect(performance.now() - started).toBeLessThan(1_000);
  });

  it('takes a slow answer that comes within the timeout', async () => {
    expect(await channels.deliver(webhook('/slow'), never)).toMatchObject({ ok: true, status: 200 });
  });

  it('counts a 2xx as delivered without waiting for its body', async () => {
    expect(await channels.deliver(webhook('/slow-body'), never)).toMatchObject({ ok: true, status: 200 });
  });

  it('keeps the status of an error whose body never ends', async () => {
    expect(await channels.deliver(webhook('/slow-error-body'), never)).toMatchObject({ ok: false, status: 503, retryable: true, error: `503 from ${host()}: overloaded, and never an end` });
  });

  it('says a refused connection is worth a retry', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const delivery = { ...webhook('/ok'), channel: { kind: 'webhook' as const, url: `http://127.0.0.1:${port}/ok`, secret: SECRET } };
    expect(await channels.deliver(delivery, never)).toEqual({ ok: false, status: null, error: `cannot reach 127.0.0.1:${port} (ECONNREFUSED)`, retryable: true });
  });
});

describe('signed webhooks and callbacks', () => {
  /** Stripe's scheme, by hand: t and v1 from the header, HMAC-SHA256 of "t.body" with the secret. */
  function verifyAsStripeDoes(body: string, header: string, secret: string): boolean {
    const parts = Object.fromEntries(header.split(',').map((part) => part.split('=') as [string, string]));
    const expected = createHmac('sha256', secret).update(`${parts.t}.${body}`, 'utf8').digest('hex');
    return parts.v1 === expected && Math.abs(Date.now() / 1000 - Number(parts.t)) <= 300;
  }

  it('a webhook is {id, event, content}, signed over the exact bytes sent', async () => {
    expect(await channels.deliver(webhook('/ok'), never)).toMatchObject({ ok: true });
    const got = lastAt('/ok');
    expect(JSON.parse(got.body)).toEqual({ id: 'b2c3d4e5f6a1', event: 'escalated', content: buildContent() });
    expect(got.headers['interlock-message-id']).toBe('b2c3d4e5f6a1');
    const signature = got.headers['interlock-signature'] as string;
    expect(signature).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    expect(verifyAsStripeDoes(got.body, signature, SECRET)).toBe(true);
    expect(verifyAsStripeDoes(got.body, signature, 'another-secret-0123456789')).toBe(false);
  });

  it('a callback is the refund answer exactly, and the agents’ client verifies it', async () => {
    expect(await channels.deliver(callback('/ok'), never)).toMatchObject({ ok: true, status: 200 });
    const got = lastAt('/ok');
    expect(got.body).toBe(JSON.stringify(ANSWER));
    const signature = got.headers['interlock-signature'] as string;
    expect(verifyAsStripeDoes(got.body, signature, SECRET)).toBe(true);
    await expect(verifyCallback(got.body, signature, SECRET)).resolves.toEqual(ANSWER);
    expect(got.headers['interlock-message-id']).toBe('c3d4e5f6a1b2');
  });

  it('stamps the signature with the wall clock it is given', async () => {
    const stamped = createChannels(buildConfig(), { clock: { nowMs: () => NOW_MS, wallMs: () => 1_800_000_000_999 } });
    await stamped.deliver(callback('/ok'), never);
    expect(lastAt('/ok').headers['interlock-signature']).toMatch(/^t=1800000000,v1=/);
  });

  it('a callback with no body is a final failure, and nothing is sent', async () => {
    const before = received.length;
    const noBody = { ...callback('/ok'), content: buildContent({ event: 'final' }) };
    expect(await channels.deliver(noBody, never)).toEqual({ ok: false, status: null, error: 'a callback message carries no body', retryable: false });
    expect(received.length).toBe(before);
  });
});
