import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Resolve } from '../../server/outbox/address-guard.ts';
import { createChannels } from '../../server/outbox/channels.ts';
import type { Delivery, NotificationsConfig } from '../../server/outbox/types.ts';

// The address guard on deliveries: a callback, webhook or Slack URL may not reach an address
// that is not global unicast (private, loopback, link-local, documentation, …; which ones is
// address-guard.test.ts) unless the config allows that host or address, and the connection goes
// to the address that was checked, whatever a second DNS answer would say.

const SECRET = 'support-bot-callback-secret-0123';

let server: Server;
let port: number;
const received: { host: string | undefined; headers: IncomingHttpHeaders }[] = [];
/** A receiver on every address of this machine (dual-stack), counting what reaches it. */
let everywhere: Server;
let everywherePort: number;
let everywhereHits = 0;

beforeAll(async () => {
  server = createServer((req, res) => {
    received.push({ host: req.headers.host, headers: req.headers });
    req.resume();
    res.writeHead(200).end('ok');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
  everywhere = createServer((req, res) => {
    everywhereHits += 1;
    req.resume();
    res.writeHead(200).end('ok');
  });
  await new Promise<void>((resolve) => everywhere.listen(0, '::', resolve));
  everywherePort = (everywhere.address() as AddressInfo).port;
});

afterAll(async () => {
  for (const open of [server, everywhere]) {
    open.closeAllConnections();
    await new Promise((resolve) => open.close(resolve));
  }
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

  it('refuses a documentation address (TEST-NET-1, 192.0.2.2) as a final failure and connects to nothing, though this machine may answer on it', async () => {
    // 192.0.2.2 is not globally reachable (RFC 5737); where a test machine has it as its own
    // address, a receiver listening on every address would take the callback.
    const channels = createChannels(buildConfig([]), { resolve: tableResolver({ 'docs.example': ['192.0.2.2'] }) });
    const outcomes = [
      await channels.deliver(callbackTo(`http://192.0.2.2:${everywherePort}/cb`), never),
      await channels.deliver(callbackTo(`http://docs.example:${everywherePort}/cb`), never),
      await channels.deliver(callbackTo(`http://[::ffff:192.0.2.2]:${everywherePort}/cb`), never),
    ];
    expect(outcomes).toEqual([
      { ok: false, status: null, error: 'refused: 192.0.2.2 is a reserved address (allow it in notifications.callback_allow_private if it is meant)', retryable: false },
      { ok: false, status: null, error: 'refused: docs.example resolves to 192.0.2.2, a reserved address (allow it in notifications.callback_allow_private if it is meant)', retryable: false },
      {
        ok: false,
        status: null,
        error: 'refused: ::ffff:c000:202 is an IPv4-mapped form of 192.0.2.2, a reserved address (allow it in notifications.callback_allow_private if it is meant)',
        retryable: false,
      },
    ]);
    expect(everywhereHits).toBe(0);
  });

  it('refuses Teredo, local NAT64 and the other IPv6 forms that slipped through, and still lets an allow-listed one through', async () => {
    const resolve = tableResolver({ 'teredo.example': ['2001:0:4136:e378:8000:63bf:3fff:fdd2'], 'nat64.example': ['64:ff9b:1::a00:1'] });
    const channels = createChannels(buildConfig([]), { resolve });
    expect(await channels.deliver(callbackTo('https://teredo.example/cb'), never)).toMatchObject({ ok: false, retryable: false, error: expect.stringContaining('a Teredo address') });
    expect(await channels.deliver(callbackTo('https://nat64.example/cb'), never)).toMatchObject({
      ok: false,
      retryable: false,
      error: expect.stringContaining('nat64.example resolves to 64:ff9b:1::a00:1, a NAT64 form of 10.0.0.1, a private address'),
    });
    for (const address of ['100::1', '2001:db8::1']) {
      expect(await channels.deliver(callbackTo(`http://[${address}]:${everywherePort}/cb`), never)).toMatchObject({ ok: false, retryable: false, error: expect.stringMatching(/^refused: /) });
    }
    expect(everywhereHits).toBe(0);
    // The allow-list still opens a refused address when it names it.
    expect(await createChannels(buildConfig(['::1'])).deliver(callbackTo(`http://[::1]:${everywherePort}/cb`), never)).toMatchObject({ ok: true, status: 200 });
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
