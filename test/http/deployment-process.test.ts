import { appendFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG_PATH } from '../../server/config/load.ts';
import { limits } from '../../shared/limits.ts';
import { DEMO_PASSWORD } from '../support/app-world.ts';
import { freePort, runServerToExit, type ServerProcess, startServerProcess, writeTestConfig, compiledToolCommand } from '../support/server-process.ts';

// `npm start` as a deployment behind a TLS proxy runs it, in a real process: the config's
// public_url and trust_proxy reach the listening server (Secure cookies, HSTS, the client address
// believed, the Host names served, the header cap), and the shipped demo credentials stop a start
// with Stripe test mode.

const dirs: string[] = [];
const servers: ServerProcess[] = [];
afterAll(async () => {
  for (const server of servers) {
    server.child.kill('SIGTERM');
    await server.exited;
  }
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function dataDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'interlock-deploy-'));
  dirs.push(dir);
  return dir;
}

/** One request over a real socket, headers as given (fetch would add and forbid some). */
function send(url: string, path: string, options: { method?: string; headers?: Record<string, string>; body?: string }) {
  return new Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }>((resolve, reject) => {
    const req = httpRequest(`${url}${path}`, { method: options.method ?? 'GET', headers: options.headers ?? {} }, (res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => {
        body += chunk.toString();
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end(options.body);
  });
}

describe('a server behind a TLS proxy (real process)', () => {
  it('sets Secure cookies and HSTS, believes the proxy’s X-Forwarded-For, serves its names only and caps headers', async () => {
    const dir = dataDir();
    const config = writeTestConfig(dir, { unpaced: true });
    appendFileSync(config, '\npublic_url: "https://interlock.example.com"\ntrust_proxy: 1\n');
    const port = await freePort();
    const server = await startServerProcess(
      { PORT: String(port), SANDBOX_PORT: String(await freePort()), DATA_DIR: join(dir, 'data'), INTERLOCK_CONFIG: config, LOG_LEVEL: 'info' },
      { logs: true },
    );
    servers.push(server);
    const logIn = (password: string, client: string, host = 'interlock.example.com') =>
      send(server.url, '/api/session', {
        method: 'POST',
        headers: { host, 'x-forwarded-for': client, 'x-forwarded-proto': 'https', 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'ana', password }),
      });

    const ok = await logIn(DEMO_PASSWORD, '198.51.100.1');
    expect(ok.status).toBe(200);
    const cookies = ([] as string[]).concat(ok.headers['set-cookie'] ?? []);
    expect(cookies.map((c) => [c.split('=')[0], /; Secure/.test(c), /; HttpOnly/.test(c), /; SameSite=Strict/.test(c)])).toEqual([
      ['interlock_session', true, true, true],
      ['interlock_device', true, true, true],
    ]);
    expect(ok.headers['strict-transport-security']).toBe(`max-age=${limits.hstsMaxAgeS}`);

    // The client is the address the proxy in front saw, not one the client wrote before it (the
    // server logs each request with the address it believes).
    expect((await logIn('wrong', '203.0.113.66, 198.51.100.2')).status).toBe(401);
    const believed = server
      .stdout()
      .split('\n')
      .filter((line) => line.includes('"url":"/api/session"'))
      .map((line) => (JSON.parse(line) as { req?: { remoteAddress?: string } }).req?.remoteAddress)
      .filter((address) => address !== undefined);
    expect(believed).toEqual(['198.51.100.1', '198.51.100.2']);

    const rebound = await logIn(DEMO_PASSWORD, '198.51.100.4', 'rebound.example');
    expect([rebound.status, JSON.parse(rebound.body).error.code]).toEqual([421, 'host_not_allowed']);
    expect((await send(server.url, '/healthz', { headers: { host: '10.1.2.3' } })).status).toBe(200);

    const huge = await send(server.url, '/readyz', { headers: { host: 'interlock.example.com', 'x-padding': 'x'.repeat(limits.headerBytesMax) } });
    expect([huge.status, JSON.parse(huge.body).error.code]).toEqual([400, 'validation_failed']);
  }, 60_000);

  it('refuses to start with Stripe test mode while a demo credential of the shipped interlock.yaml is in the config: exit 2, one line naming the entry', async () => {
    const dir = dataDir();
    const config = join(dir, 'interlock.yaml');
    writeFileSync(config, readFileSync(DEFAULT_CONFIG_PATH, 'utf8').replace(/^stripe: \{ mode: sandbox \}$/m, 'stripe: { mode: test }'));
    const { exit, stderr } = await runServerToExit({
      DATA_DIR: join(dir, 'data'),
      PORT: String(await freePort()),
      INTERLOCK_CONFIG: config,
      STRIPE_SECRET_KEY: 'sk_test_deploy',
      STRIPE_WEBHOOK_SECRETS: 'whsec_deploy',
    });
    expect(exit).toBe('2');
    expect(stderr.trim()).toBe(
      `Interlock did not start: ${config}: people[0].password: ana still has the demo password published in the shipped interlock.yaml, which anyone can use with stripe.mode: test; make a new hash with \`${compiledToolCommand('hash-secret', 'password <password>')}\``,
    );
  }, 60_000);
});
