import { type AddressInfo, connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InterlockConfig } from '../../server/config/schema.ts';
import { limits } from '../../shared/limits.ts';
import { type AppWorld, buildAppWorld, DEMO_PASSWORD, testConfig } from '../support/app-world.ts';

// A deployment behind TLS (docs/operators/tls-and-proxies.md): helmet's headers with our own content security
// policy, HSTS and Secure cookies when public_url is https, the Host names served, the proxies
// whose word on the client's address is believed, and the connection caps.

const PAGE_CSP =
  "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; " +
  "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";
const API_CSP = "default-src 'none'; frame-ancestors 'none'";

function configWith(network: Partial<InterlockConfig['network']>, publicUrl: string | null = null): InterlockConfig {
  const config = testConfig();
  return { ...config, network: { ...config.network, ...network }, notifications: { ...config.notifications, publicUrl } };
}

let plain: AppWorld;
let behindProxy: AppWorld;
let proxyList: AppWorld;
beforeAll(async () => {
  [plain, behindProxy, proxyList] = await Promise.all([
    buildAppWorld(),
    buildAppWorld({ config: configWith({ trustProxy: 1, allowedHosts: ['interlock.internal'] }, 'https://interlock.example.com') }),
    buildAppWorld({ config: configWith({ trustProxy: ['10.0.0.0/8'] }) }),
  ]);
});
afterAll(async () => Promise.all([plain.close(), behindProxy.close(), proxyList.close()]));

const get = (world: AppWorld, url: string, headers: Record<string, string> = {}, remoteAddress?: string) =>
  world.app.inject({ method: 'GET', url, headers, ...(remoteAddress ? { remoteAddress } : {}) });

const logIn = (world: AppWorld, password: string, headers: Record<string, string>, remoteAddress = '127.0.0.1') =>
  world.app.inject({ method: 'POST', url: '/api/session', remoteAddress, headers, payload: { name: 'ana', password } });

describe('security headers', () => {
  it('keep the content security policy as it was, pages and API alike, beside helmet’s headers', async () => {
    const api = await get(plain, '/readyz');
    const page = await get(plain, '/items/abc');
    expect([api.headers['content-security-policy'], page.headers['content-security-policy']]).toEqual([API_CSP, PAGE_CSP]);
    for (const answer of [api, page]) {
      expect(answer.headers).toMatchObject({
        'x-content-type-options': 'nosniff',
        'referrer-policy': 'no-referrer',
        'x-frame-options': 'DENY',
        'cross-origin-opener-policy': 'same-origin',
        'cross-origin-resource-policy': 'same-origin',
      });
    }
    expect(api.headers['cache-control']).toBe('no-store');
  });

  it('HSTS and Secure cookies only when public_url is https', async () => {
    expect((await get(plain, '/readyz')).headers['strict-transport-security']).toBeUndefined();
    expect((await get(behindProxy, '/readyz', { host: 'interlock.example.com' })).headers['strict-transport-security']).toBe(`max-age=${limits.hstsMaxAgeS}`);
    const cookies = async (world: AppWorld, host: string) => ([] as string[]).concat((await logIn(world, DEMO_PASSWORD, { host }, '192.0.2.200')).headers['set-cookie'] ?? []);
    const overHttp = await cookies(plain, 'localhost');
    const overHttps = await cookies(behindProxy, 'interlock.example.com');
    expect(overHttp.map((c) => c.split('=')[0])).toEqual(['interlock_session', 'interlock_device']);
    expect(overHttp.every((c) => !/; Secure/.test(c))).toBe(true);
    expect(overHttps.map((c) => c.split('=')[0])).toEqual(['interlock_session', 'interlock_device']);
    expect(overHttps.every((c) => /; Secure/.test(c))).toBe(true);
  });
});

describe('the Host names served', () => {
  it.each([
    ['localhost:3000', 200],
    ['127.0.0.1:3000', 200],
    ['[::1]:3000', 200],
    ['LOCALHOST.', 200],
    ['evil.example', 421],
    ['127.0.0.1.evil.example', 421],
  ])('without public_url or allowed_hosts, %s is answered %i', async (host, status) => {
    const response = await get(plain, '/readyz', { host });
    expect(response.statusCode).toBe(status);
    if (status === 421) {
      expect(response.json()).toEqual({ error: { code: 'host_not_allowed', message: 'this server does not answer for that host name; use its public address' } });
    }
  });

  it('public_url’s host and allowed_hosts are answered; any other is refused, logins and the live feed included, and liveness answers any', async () => {
    expect((await get(behindProxy, '/readyz', { host: 'interlock.example.com' })).statusCode).toBe(200);
    expect((await get(behindProxy, '/readyz', { host: 'interlock.internal:8443' })).statusCode).toBe(200);
    expect((await get(behindProxy, '/readyz', { host: 'rebound.example' })).statusCode).toBe(421);
    expect((await logIn(behindProxy, DEMO_PASSWORD, { host: 'rebound.example' })).statusCode).toBe(421);
    expect((await get(behindProxy, '/api/live', { host: 'rebound.example' })).statusCode).toBe(421);
    expect((await get(behindProxy, '/healthz', { host: 'rebound.example' })).statusCode).toBe(200);
    expect((await get(plain, '/healthz', { host: '10.9.8.7' })).json()).toMatchObject({ ok: true });
  });

  it('a websocket upgrade for a Host not served is answered 421 and its connection closed, not kept open forever', async () => {
    await plain.app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = plain.app.server.address() as AddressInfo;
    const upgrade = (host: string) =>
      new Promise<{ answer: string; closedByServer: boolean }>((resolve) => {
        let answer = '';
        const socket = connect(port, '127.0.0.1', () =>
          socket.write(
            `GET /api/live HTTP/1.1\r\nHost: ${host}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n`,
          ),
        );
        // The client never hangs up: only the server can end it.
        const timer = setTimeout(() => {
          socket.destroy();
          resolve({ answer, closedByServer: false });
        }, 2_000);
        socket.on('data', (chunk) => {
          answer += chunk;
        });
        socket.on('end', () => {
          clearTimeout(timer);
          socket.destroy();
          resolve({ answer, closedByServer: true });
        });
      });
    const refused = await upgrade('rebound.example');
    expect(refused.answer).toMatch(/^HTTP\/1\.1 421 /);
    expect(refused.closedByServer).toBe(true);
  });

  it('a malformed websocket handshake from a signed-in person is answered 400 validation_failed in the contract’s JSON, not a plain-text line', async () => {
    if (!plain.app.server.listening) await plain.app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = plain.app.server.address() as AddressInfo;
    const { cookie } = await plain.login('ana');
    const handshake = (headers: string) =>
      new Promise<string>((resolve) => {
        let answer = '';
        const socket = connect(port, '127.0.0.1', () => socket.write(`GET /api/live HTTP/1.1\r\nHost: localhost\r\nCookie: ${cookie}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n${headers}\r\n`));
        const timer = setTimeout(() => socket.destroy(), 2_000);
        socket.on('data', (chunk) => {
          answer += chunk;
        });
        socket.on('close', () => {
          clearTimeout(timer);
          resolve(answer);
        });
      });
    for (const headers of [
      'Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: bad\r\n', 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n', 'Sec-WebSocket-Version: 7\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n',
      // The library refuses a subprotocol list it cannot parse, or one naming a protocol twice, in plain text too.
      'Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Protocol: a b\r\n',
      'Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Protocol: chat, chat\r\n',
    ]) {
      const answer = await handshake(headers);
      expect(answer, headers).toMatch(/^HTTP\/1\.1 400 /);
      expect(answer, headers).toMatch(/content-type: application\/json/i);
      expect(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4))).toMatchObject({ error: { code: 'validation_failed', message: expect.stringContaining('Sec-WebSocket') } });
    }
  });

  it('behind a believed proxy the name is the one it forwards (X-Forwarded-Host)', async () => {
    expect((await get(behindProxy, '/readyz', { host: '10.0.0.5:3000', 'x-forwarded-host': 'interlock.example.com' })).statusCode).toBe(200);
    expect((await get(behindProxy, '/readyz', { host: 'interlock.example.com', 'x-forwarded-host': 'rebound.example' })).statusCode).toBe(421);
    // Not believed without trust_proxy: the Host header itself is judged.
    expect((await get(plain, '/readyz', { host: 'localhost', 'x-forwarded-host': 'rebound.example' })).statusCode).toBe(200);
  });
});

describe('trust_proxy: whose client address is believed', () => {
  // Observed through login throttling: a failure makes the next attempt of that name from the same
  // client address wait 1 s, and from another not at all.
  async function secondAttemptFrom(world: AppWorld, first: Record<string, string>, second: Record<string, string>, socket: string): Promise<number> {
    const host = world === behindProxy ? 'interlock.example.com' : 'localhost';
    expect((await logIn(world, 'wrong', { host, ...first }, socket)).statusCode).toBe(401);
    const status = (await logIn(world, 'wrong', { host, ...second }, socket)).statusCode;
    return status;
  }

  it('false (the default): X-Forwarded-For is ignored, the connection’s address is the client', async () => {
    expect(await secondAttemptFrom(plain, { 'x-forwarded-for': '198.51.100.1' }, { 'x-forwarded-for': '198.51.100.2' }, '192.0.2.10')).toBe(429);
  });

  it('a number of hops: the address that many proxies in front saw is the client', async () => {
    expect(await secondAttemptFrom(behindProxy, { 'x-forwarded-for': '198.51.100.3' }, { 'x-forwarded-for': '198.51.100.4' }, '127.0.0.1')).toBe(401);
    // A client writing its own X-Forwarded-For in front of the proxy's entry changes nothing: the proxy's entry is believed.
    expect(await secondAttemptFrom(behindProxy, { 'x-forwarded-for': '203.0.113.1, 198.51.100.5' }, { 'x-forwarded-for': '203.0.113.2, 198.51.100.5' }, '127.0.0.1')).toBe(429);
  });

  it('a list of addresses: believed only from a proxy in it', async () => {
    expect(await secondAttemptFrom(proxyList, { 'x-forwarded-for': '198.51.100.6' }, { 'x-forwarded-for': '198.51.100.7' }, '10.1.2.3')).toBe(401);
    expect(await secondAttemptFrom(proxyList, { 'x-forwarded-for': '198.51.100.8' }, { 'x-forwarded-for': '198.51.100.9' }, '192.0.2.11')).toBe(429);
  });
});

describe('connection and header caps', () => {
  it('the server holds each cap of shared/limits.ts', () => {
    const server = plain.app.server;
    expect({
      // Node keeps the option on the server; its types leave it out.
      maxHeaderSize: Reflect.get(server, 'maxHeaderSize'),
      requestTimeout: server.requestTimeout,
      timeout: server.timeout,
      // Between requests on a kept-alive connection Node closes it after keepAliveTimeout (Fastify's
      // default 72 s), whatever `timeout` says: the same idle limit, so the docs' 2 minutes hold.
      keepAliveTimeout: server.keepAliveTimeout,
      maxRequestsPerSocket: server.maxRequestsPerSocket,
    }).toEqual({
      maxHeaderSize: limits.headerBytesMax,
      requestTimeout: limits.requestReceiveMs,
      timeout: limits.connectionIdleMs,
      keepAliveTimeout: limits.connectionIdleMs,
      maxRequestsPerSocket: limits.requestsPerConnectionMax,
    });
  });
});
