import { connect } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AppWorld, AGENT_TOKEN, buildAppWorld, WEBHOOK_SECRET } from '../support/app-world.ts';

// The agents' contract as code (shared/schemas.ts, server/http/errors.ts, openapi.ts), attacked
// through the real app: bodies that try to slip past validation, errors that could leak
// internals, routes that could have lost their authentication, and the published document.
// docs/agents/http-api.md: every 4xx/5xx is {"error": {"code", "message"}}; a refused request writes nothing.

let w: AppWorld;
let pi: string;

beforeAll(async () => {
  w = await buildAppWorld();
  pi = await w.payment(10_000);
});

afterAll(async () => {
  await w?.close();
});

const rawPost = (payload: string, headers: Record<string, string> = {}) =>
  w.app.inject({ method: 'POST', url: '/v1/refunds', payload, headers: { authorization: `Bearer ${AGENT_TOKEN}`, 'content-type': 'application/json', ...headers } });

function expectContractError(response: { statusCode: number; body: string }, status: number, code: string) {
  expect(response.statusCode, response.body).toBe(status);
  const body = JSON.parse(response.body);
  expect(Object.keys(body)).toEqual(['error']);
  expect(Object.keys(body.error).sort()).toEqual(['code', 'message']);
  expect(body.error.code).toBe(code);
  // Nothing of the machinery: no Fastify or Ajv codes, schema paths, stack frames or SQL.
  expect(response.body).not.toMatch(/FST_|#\/properties|schemaPath|instancePath|\bat .*\.ts:\d+|SQLITE|sqlite|SELECT |node_modules/);
}

describe('bodies that try to slip past validation write nothing (holds)', () => {
  const cases: [string, () => string][] = [
    ['__proto__ key', () => `{"request_id":"p-1","payment_intent":"${pi}","amount":100,"__proto__":{"amount":1}}`],
    ['constructor.prototype', () => `{"request_id":"p-2","payment_intent":"${pi}","amount":100,"constructor":{"prototype":{"admin":true}}}`],
    ['duplicate key, the last one bad', () => `{"request_id":"p-3","payment_intent":"${pi}","amount":100,"amount":100000000000}`],
    ['duplicate key smuggling a refund over the cap', () => `{"request_id":"p-3b","payment_intent":"${pi}","amount":100,"amount":-5}`],
    ['-0', () => `{"request_id":"p-4","payment_intent":"${pi}","amount":-0}`],
    ['1e21', () => `{"request_id":"p-5","payment_intent":"${pi}","amount":1e21}`],
    ['1e400 (Infinity)', () => `{"request_id":"p-6","payment_intent":"${pi}","amount":1e400}`],
    ['1.5', () => `{"request_id":"p-7","payment_intent":"${pi}","amount":1.5}`],
    ['"1500"', () => `{"request_id":"p-8","payment_intent":"${pi}","amount":"1500"}`],
    ['request_id with CRLF', () => JSON.stringify({ request_id: 'p-9\r\nX-Evil: 1', payment_intent: pi, amount: 100 })],
    ['request_id with a dotless i', () => JSON.stringify({ request_id: 'p-\u0131', payment_intent: pi, amount: 100 })],
    ['request_id with a fullwidth letter', () => JSON.stringify({ request_id: 'ｐ-10', payment_intent: pi, amount: 100 })],
    ['request_id with a trailing newline', () => JSON.stringify({ request_id: 'p-11\n', payment_intent: pi, amount: 100 })],
    ['request_id too long', () => JSON.stringify({ request_id: 'p'.repeat(201), payment_intent: pi, amount: 100 })],
    ['flag with the Kelvin sign', () => JSON.stringify({ request_id: 'p-12', payment_intent: pi, amount: 100, flags: ['\u212a'] })],
    ['flag upper case', () => JSON.stringify({ request_id: 'p-13', payment_intent: pi, amount: 100, flags: ['VIP'] })],
    ['reason with a lone surrogate', () => `{"request_id":"p-14","payment_intent":"${pi}","amount":100,"reason":"a\\ud800"}`],
    ['context_url javascript:', () => JSON.stringify({ request_id: 'p-15', payment_intent: pi, amount: 100, context_url: 'javascript:alert(1)//https://x' })],
    ['context_url data:', () => JSON.stringify({ request_id: 'p-16', payment_intent: pi, amount: 100, context_url: 'data:text/html,<script>alert(1)</script>' })],
    ['context_url with CRLF', () => JSON.stringify({ request_id: 'p-17', payment_intent: pi, amount: 100, context_url: 'https://x.example/\r\nSet-Cookie: a=b' })],
    ['context_url with a quote', () => JSON.stringify({ request_id: 'p-18', payment_intent: pi, amount: 100, context_url: 'https://x.example/"><script>alert(1)</script>' })],
    ['context_url with a zero-width space', () => JSON.stringify({ request_id: 'p-19', payment_intent: pi, amount: 100, context_url: 'https://x.example/\u200b' })],
    ['context_url in upper-case scheme', () => JSON.stringify({ request_id: 'p-20', payment_intent: pi, amount: 100, context_url: 'JAVASCRIPT:alert(1)' })],
    ['unknown field', () => JSON.stringify({ request_id: 'p-21', payment_intent: pi, amount: 100, callback_url: 'http://127.0.0.1/' })],
    ['an array', () => '[]'],
    ['null', () => 'null'],
  ];

  it.each(cases)('%s: 400 validation_failed, nothing journaled, nothing sent', async (_name, body) => {
    const entries = await w.entryCount();
    const refunds = w.sandbox.refunds(pi).length;
    const response = await rawPost(body());
    expectContractError(response, 400, 'validation_failed');
    expect(await w.entryCount()).toBe(entries);
    expect(w.sandbox.refunds(pi).length).toBe(refunds);
  });
});

describe('authentication on every route the document lists (holds)', () => {
  const sample: Record<string, string> = { request_id: 'case-1', effect_id: '000000000000' };
  const operations = async () => {
    const doc = (await w.app.inject({ method: 'GET', url: '/openapi.json' })).json() as { paths: Record<string, Record<string, { security?: unknown[] }>> };
    const out: { method: string; path: string; url: string; security: unknown[] | undefined }[] = [];
    for (const [path, methods] of Object.entries(doc.paths)) {
      for (const [method, operation] of Object.entries(methods)) {
        out.push({ method: method.toUpperCase(), path, url: path.replace(/\{(\w+)\}/g, (_m, name: string) => sample[name] ?? 'x'), security: operation.security });
      }
    }
    return out;
  };

  it('every /v1 route refuses no token and a wrong token with 401 unauthorized', async () => {
    const v1 = (await operations()).filter((op) => op.path.startsWith('/v1/'));
    expect(v1.length).toBeGreaterThanOrEqual(4);
    for (const op of v1) {
      expect(op.security, `${op.method} ${op.path} declares its security`).toEqual([{ agentToken: [] }]);
      for (const authorization of [undefined, 'Bearer sk_agent_wrong_token_123', `Basic ${AGENT_TOKEN}`, `Bearer ${AGENT_TOKEN} `]) {
        const response = await w.app.inject({
          method: op.method as 'GET',
          url: op.url,
          headers: { 'content-type': 'application/json', ...(authorization ? { authorization } : {}) },
          ...(op.method === 'POST' ? { payload: '{' } : {}),
        });
        expectContractError(response, 401, 'unauthorized');
      }
    }
  });

  it('every /api route but logging in refuses no session; every change refuses a session without x-csrf-token', async () => {
    const api = (await operations()).filter((op) => op.path.startsWith('/api/') && !(op.method === 'POST' && op.path === '/api/session') && op.path !== '/api/live');
    expect(api.length).toBeGreaterThanOrEqual(10);
    const ana = await w.login('ana');
    for (const op of api) {
      expect(op.security, `${op.method} ${op.path} declares its security`).toEqual([{ session: [] }]);
      const payload = op.method === 'POST' || op.method === 'DELETE' ? { payload: '{}' } : {};
      const anonymous = await w.app.inject({ method: op.method as 'GET', url: op.url, headers: { 'content-type': 'application/json' }, ...payload });
      expectContractError(anonymous, 401, 'unauthorized');
      const forged = await w.app.inject({ method: op.method as 'GET', url: op.url, headers: { 'content-type': 'application/json', cookie: 'interlock_session=forged' }, ...payload });
      expectContractError(forged, 401, 'unauthorized');
      if (op.method !== 'GET') {
        const noCsrf = await w.app.inject({ method: op.method as 'GET', url: op.url, headers: { 'content-type': 'application/json', cookie: ana.cookie }, ...payload });
        expectContractError(noCsrf, 403, 'csrf_failed');
        const wrongCsrf = await w.app.inject({ method: op.method as 'GET', url: op.url, headers: { 'content-type': 'application/json', cookie: ana.cookie, 'x-csrf-token': `${ana.csrf}x` }, ...payload });
        expectContractError(wrongCsrf, 403, 'csrf_failed');
      }
    }
  });
});

describe('the published document (holds)', () => {
  it('/openapi.json, /docs/json and /docs carry no token, hash, password or secret from the config', async () => {
    const secrets = [
      AGENT_TOKEN,
      WEBHOOK_SECRET,
      'interlock-demo',
      ...w.services.config.agents.map((agent) => agent.tokenSha256),
      ...w.services.config.people.map((person) => person.passwordHash),
      'PRIVATE KEY',
    ];
    for (const url of ['/openapi.json', '/docs/json', '/docs/yaml', '/docs', '/docs/static/index.html']) {
      const response = await w.app.inject({ method: 'GET', url });
      for (const secret of secrets) expect(response.body.includes(secret), `${url} carries ${secret.slice(0, 12)}…`).toBe(false);
      expect(response.body).not.toMatch(/scrypt\$|sk_agent_|whsec_|token_sha256|password_env|secret_env/);
    }
  });
});

describe('errors Fastify raises before a route runs', () => {
  it('a malformed percent-escape in the path is answered {"error":{"code","message"}}, not Fastify\'s own shape', async () => {
    for (const url of ['/v1/refunds/%ff', '/v1/receipts/%zz', '/api/items/%E0%A4%A', '/webhooks/%zz']) {
      const response = await w.app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${AGENT_TOKEN}` } });
      // Fails today: 400 {"error":"Bad Request","code":"FST_ERR_BAD_URL","message":"'/v1/refunds/%ff' is not a valid url component","statusCode":400}
      expectContractError(response, response.statusCode === 404 ? 404 : 400, response.statusCode === 404 ? 'not_found' : 'validation_failed');
    }
  });

  it('a malformed chunked body is answered {"error":{"code","message"}}, not Node\'s "Client Error"', async () => {
    await w.app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = w.app.server.address() as AddressInfo;
    const answer = await new Promise<string>((resolve) => {
      const socket = connect(port, '127.0.0.1', () =>
        socket.end(
          `POST /v1/refunds HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${AGENT_TOKEN}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n5\r\n{"a":\r\nzz\r\n`,
        ),
      );
      let text = '';
      socket.on('data', (chunk) => {
        text += chunk;
      });
      socket.on('close', () => resolve(text));
    });
    const [head = '', body = ''] = answer.split('\r\n\r\n');
    const status = Number(head.split(' ')[1]);
    // Fails today: 400 {"error":"Bad Request","message":"Client Error","statusCode":400}
    expectContractError({ statusCode: status, body }, 400, 'validation_failed');
  });
});
