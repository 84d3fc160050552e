import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { classifyAddress, type Resolve } from '../../server/outbox/address-guard.ts';
import { createChannels } from '../../server/outbox/channels.ts';
import type { Delivery, NotificationsConfig } from '../../server/outbox/types.ts';

// The address guard: a callback, webhook or Slack URL may not reach a private, loopback or
// link-local address unless the config allows that host or address, and the connection goes to
// the address that was checked, whatever a second DNS answer would say.

const SECRET = 'support-bot-callback-secret-0123';

let server: Server;
let port: number;
const received: { host: string | undefined; headers: IncomingHttpHeaders }[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    received.push({ host: req.headers.host, headers: req.headers });
    req.resume();
    res.writeHead(200).end('ok');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

function buildConfig(allow: string[]): NotificationsConfig {
  return { publicUrl: null, reminderAtShare: null, smtp: null, people: {}, groups: {}, agents: {}, callbackAllowPrivate: allow };
}

const callbackTo = (url: string): Delivery => ({
  id: 'c3d4e5f6a1b2',
  recipient: { kind: 'agent', name: 'support-bot' },
  channel: { kind: 'callback', url, secret: SECRET },
  content: {
    event: 'final',
    effect_id: '3f2a9c1d7e4b',
    request_id: 'case-4471',
    agent: 'support-bot',
    amount: 8_000,
    currency: 'usd',
    why: 'sent',
    reason: null,
    group: null,
    level: null,
    due_ms: null,
    link: null,
    body: { status: 'COMMITTED' },
  },
});

/** A resolver that answers from a table, counting its lookups, as a hostile DNS server might. */
function tableResolver(table: Record<string, string[] | (() => string[])>): Resolve & { lookups: number } {
  const resolve = Object.assign(
    async (host: string) => {
      resolve.lookups += 1;
      const entry = table[host];
      const addresses = typeof entry === 'function' ? entry() : entry;
      if (addresses === undefined) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
      return addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
    },
    { lookups: 0 },
  );
  return resolve;
}

const never = new AbortController().signal;

describe('which addresses are refused', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['169.254.169.254', 'link-local'],
    ['0.0.0.0', 'unspecified'],
    ['100.100.100.200', 'shared'],
    ['224.0.0.1', 'multicast'],
    ['255.255.255.255', 'reserved'],
    ['::1', 'loopback'],
    ['::', 'unspecified'],
    ['fc00::1', 'private'],
    ['fd12:3456::1', 'private'],
    ['fe80::1', 'link-local'],
    ['fe80::1%eth0', 'link-local'],
    ['ff02::1', 'multicast'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['::ffff:10.0.0.1', 'private'],
    ['::ffff:169.254.169.254', 'link-local'],
    ['64:ff9b::a9fe:a9fe', 'link-local'],
    ['2002:c0a8:0101::1', 'private'],
  ])('%s is %s', (address, kind) => {
    expect(classifyAddress(address)?.kind).toBe(kind);
  });

  it.each(['8.8.8.8', '172.32.0.1', '93.184.216.34', '2606:4700::1111', '::ffff:8.8.8.8'])('%s is public', (address) => {
    expect(classifyAddress(address)).toBeNull();
  });
});

describe('the guard on deliveries', () => {
  it('refuses loopback without the allow-list, as a final failure, and connects to nothing', async () => {
    const before = received.length;
    const outcome = await createChannels(buildConfig([])).deliver(callbackTo(`http://127.0.0.1:${port}/cb`), never);
    expect(outcome).toEqual({
      ok: false,
      status: null,
      error: 'refused: 127.0.0.1 is a loopback address (allow it in notifications.callback_allow_private if it is meant)',
      retryable: false,
    });
    expect(received.length).toBe(before);
  });

  it('allows loopback when the allow-list names the address', async () => {
    expect(await createChannels(buildConfig(['127.0.0.1'])).deliver(callbackTo(`http://127.0.0.1:${port}/cb`), never)).toMatchObject({ ok: true, status: 200 });
  });

  it('refuses a host name that resolves to 127.0.0.1 (the system resolver, and a hostile one)', async () => {
    const system = await createChannels(buildConfig([])).deliver(callbackTo(`http://localhost:${port}/cb`), never);
    expect(system).toMatchObject({ ok: false, retryable: false, error: expect.stringMatching(/^refused: localhost resolves to (127\.0\.0\.1|::1), a loopback address/) });
    const resolve = tableResolver({ 'agent.example': ['127.0.0.1'] });
    const hostile = await createChannels(buildConfig([]), { resolve }).deliver(callbackTo('https://agent.example/cb'), never);
    expect(hostile).toMatchObject({ ok: false, retryable: false, error: expect.stringContaining('refused: agent.example resolves to 127.0.0.1, a loopback address') });
  });

  it('refuses a host when any one of its addresses is private, not only the first', async () => {
    const resolve = tableResolver({ 'agent.example': ['93.184.216.34', '10.0.0.7'] });
    const outcome = await createChannels(buildConfig([]), { resolve }).deliver(callbackTo('https://agent.example/cb'), never);
    expect(outcome).toMatchObject({ ok: false, retryable: false, error: expect.stringContaining('agent.example resolves to 10.0.0.7, a private address') });
  });

  it('refuses IPv4-mapped IPv6 forms of loopback, in the URL and from DNS, and ::1', async () => {
    const channels = createChannels(buildConfig([]), { resolve: tableResolver({ 'mapped.example': ['::ffff:7f00:1'] }) });
    expect(await channels.deliver(callbackTo(`http://[::ffff:127.0.0.1]:${port}/cb`), never)).toMatchObject({
      ok: false,
      retryable: false,
      error: expect.stringContaining('::ffff:7f00:1 is an IPv4-mapped form of 127.0.0.1, a loopback address'),
    });
    expect(await channels.deliver(callbackTo('https://mapped.example/cb'), never)).toMatchObject({
      ok: false,
      error: expect.stringContaining('mapped.example resolves to ::ffff:7f00:1, an IPv4-mapped form of 127.0.0.1'),
    });
    expect(await channels.deliver(callbackTo(`http://[::1]:${port}/cb`), never)).toMatchObject({ ok: false, error: expect.stringContaining('::1 is a loopback address') });
  });

  it('refuses the cloud metadata address for every channel kind', async () => {
    const channels = createChannels(buildConfig([]));
    const url = 'http://169.254.169.254/latest/meta-data/';
    const deliveries: Delivery[] = [
      callbackTo(url),
      { ...callbackTo(url), channel: { kind: 'webhook', url, secret: SECRET } },
      { ...callbackTo(url), channel: { kind: 'slack', url } },
    ];
    for (const delivery of deliveries) {
      expect(await channels.deliver(delivery, never)).toMatchObject({ ok: false, retryable: false, error: expect.stringContaining('169.254.169.254 is a link-local address') });
    }
  });

  it('connects to the address it checked: a second DNS answer cannot rebind the host', async () => {
    let answers = 0;
    // The first answer is checked; any later one would point elsewhere. The host is not in any real DNS either.
    const resolve = tableResolver({ 'rebind.example': () => (answers++ === 0 ? ['127.0.0.1'] : ['10.9.9.9']) });
    const channels = createChannels(buildConfig(['rebind.example']), { resolve });
    const outcome = await channels.deliver(callbackTo(`http://rebind.example:${port}/cb`), never);
    expect(outcome).toMatchObject({ ok: true, status: 200 });
    expect(resolve.lookups).toBe(1);
    expect(received.at(-1)?.host).toBe(`rebind.example:${port}`);
  });

  it('a host that does not resolve is worth a retry, not a refusal', async () => {
    const outcome = await createChannels(buildConfig([]), { resolve: tableResolver({}) }).deliver(callbackTo('https://nowhere.example/cb'), never);
    expect(outcome).toEqual({ ok: false, status: null, error: 'cannot resolve nowhere.example (ENOTFOUND)', retryable: true });
  });

  it('a lookup that never answers ends at the timeout', async () => {
    const hanging: Resolve = () => new Promise(() => {});
    const outcome = await createChannels(buildConfig([]), { resolve: hanging, timeoutMs: 100 }).deliver(callbackTo('https://slow-dns.example/cb'), never);
    expect(outcome).toEqual({ ok: false, status: null, error: 'no answer from slow-dns.example within 100 ms', retryable: true });
  });
});
