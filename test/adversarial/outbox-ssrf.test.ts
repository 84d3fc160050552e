import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Resolve } from '../../server/outbox/address-guard.ts';
import { createChannels } from '../../server/outbox/channels.ts';
import type { Delivery, NotificationsConfig } from '../../server/outbox/types.ts';

// SSRF through a Slack, webhook or callback URL, against the real channels and a real receiver on
// this machine listening on every address (dual-stack), which counts every request it gets. Each
// trick below is refused as a final failure and the receiver is never reached. (These hold.)

let victim: Server;
let port: number;
let hits = 0;
let redirector: Server;
let redirectorPort: number;

beforeAll(async () => {
  victim = createServer((request, response) => {
    hits += 1;
    request.resume();
    response.writeHead(200).end('internal');
  });
  await new Promise<void>((r) => victim.listen(0, '::', r));
  port = (victim.address() as AddressInfo).port;
  redirector = createServer((request, response) => {
    request.resume();
    response.writeHead(307, { location: `http://127.0.0.1:${port}/admin` }).end();
  });
  await new Promise<void>((r) => redirector.listen(0, '127.0.0.1', r));
  redirectorPort = (redirector.address() as AddressInfo).port;
});

afterAll(async () => {
  for (const server of [victim, redirector]) {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  }
});

function config(allow: string[] = []): NotificationsConfig {
  return { publicUrl: null, reminderAtShare: null, smtp: null, people: {}, groups: {}, agents: {}, callbackAllowPrivate: allow };
}

function hostile(table: Record<string, string[]>): Resolve {
  return async (host) => {
    const addresses = table[host];
    if (!addresses) throw Object.assign(new Error(`ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
    return addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
}

const DNS = hostile({
  'loopback.evil.example': ['127.0.0.1'],
  'mapped.evil.example': ['::ffff:127.0.0.1'],
  'mapped-hex.evil.example': ['::ffff:7f00:1'],
  'zero.evil.example': ['0.0.0.0'],
  'v6zero.evil.example': ['::'],
  'v6loop.evil.example': ['::1'],
  'zoned.evil.example': ['fe80::1%lo'],
  'mixed.evil.example': ['93.184.216.34', '127.0.0.1'],
  'garbage.evil.example': ['localhost'],
  'nat64.evil.example': ['64:ff9b::7f00:1'],
  'sixtofour.evil.example': ['2002:7f00:1::1'],
});

function delivery(kind: 'slack' | 'webhook' | 'callback', url: string): Delivery {
  const base = { event: 'final' as const, effect_id: 'f00dfeedbeef', request_id: 'case-1', agent: 'bot', amount: 1, currency: 'usd', why: 'x', reason: null, group: null, level: null, due_ms: null, link: null };
  if (kind === 'callback') return { id: 'a1b2c3d4e5f6', recipient: { kind: 'agent', name: 'bot' }, channel: { kind, url, secret: 'callback-secret-0123456789' }, content: { ...base, body: { status: 'COMMITTED' } } };
  if (kind === 'webhook') return { id: 'a1b2c3d4e5f6', recipient: { kind: 'person', name: 'ana' }, channel: { kind, url, secret: 'webhook-secret-0123456789' }, content: base };
  return { id: 'a1b2c3d4e5f6', recipient: { kind: 'person', name: 'ana' }, channel: { kind, url }, content: base };
}

const never = new AbortController().signal;

describe('the address guard against URL and DNS tricks (holds)', () => {
  const literal = () => [
    `http://2130706433:${port}/`, // decimal 127.0.0.1
    `http://0177.0.0.1:${port}/`, // octal
    `http://0x7f.0.0.1:${port}/`, // hex
    `http://127.1:${port}/`, // short form
    `http://0.0.0.0:${port}/`, // reaches this host on Linux
    `http://0:${port}/`,
    `http://[::]:${port}/`,
    `http://[::1]:${port}/`,
    `http://[::ffff:127.0.0.1]:${port}/`,
    `http://[0:0:0:0:0:ffff:7f00:1]:${port}/`,
    `http://[::127.0.0.1]:${port}/`,
    `http://127.0.0.1.:${port}/`, // trailing dot
    `http://LOCALHOST:${port}/`,
  ];

  it('refuses every literal form of this host, on every channel', async () => {
    const channels = createChannels(config(), { timeoutMs: 2_000 });
    const before = hits;
    for (const url of literal()) {
      for (const kind of ['slack', 'webhook', 'callback'] as const) {
        const outcome = await channels.deliver(delivery(kind, url), never);
        expect(outcome, `${kind} ${url}`).toMatchObject({ ok: false, retryable: false });
      }
    }
    expect(hits - before).toBe(0);
  });

  it('refuses names that resolve to this host in any form, or to anything unparseable', async () => {
    const channels = createChannels(config(), { timeoutMs: 2_000, resolve: DNS });
    const before = hits;
    for (const host of ['loopback', 'mapped', 'mapped-hex', 'zero', 'v6zero', 'v6loop', 'zoned', 'mixed', 'garbage', 'nat64', 'sixtofour']) {
      const outcome = await channels.deliver(delivery('callback', `http://${host}.evil.example:${port}/`), never);
      expect(outcome, host).toMatchObject({ ok: false, retryable: false });
      expect(outcome.ok ? '' : outcome.error, host).toMatch(/^refused: /);
    }
    expect(hits - before).toBe(0);
  });

  it('does not follow a redirect from an allowed receiver to this host', async () => {
    const channels = createChannels(config(['127.0.0.1']), { timeoutMs: 2_000 });
    const before = hits;
    const outcome = await channels.deliver(delivery('webhook', `http://127.0.0.1:${redirectorPort}/hook`), never);
    expect(outcome).toMatchObject({ ok: false, status: 307, retryable: false });
    expect(hits - before).toBe(0);
  });

  it('an allow-listed address does not open its IPv6 neighbours or other loopback addresses', async () => {
    const channels = createChannels(config(['127.0.0.1']), { timeoutMs: 2_000 });
    const before = hits;
    for (const url of [`http://[::1]:${port}/`, `http://127.0.0.2:${port}/`, `http://[::ffff:127.0.0.2]:${port}/`]) {
      const outcome = await channels.deliver(delivery('callback', url), never);
      expect(outcome, url).toMatchObject({ ok: false, retryable: false });
    }
    expect(hits - before).toBe(0);
  });
});
