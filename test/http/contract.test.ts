import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERROR_CODES, type ErrorCode } from '../../shared/api.ts';
import { RefundAnswerSchema } from '../../shared/schemas.ts';
import { documentationPages, fencedBlocks, readPage } from '../docs/pages.ts';
import { AGENT_TOKEN, type AppWorld, buildAppWorld } from '../support/app-world.ts';

// The OpenAPI document is generated from the schemas the server validates with; the README and the
// pages of docs/, the contract page docs/agents/http-api.md among them, are what people read. Each
// must name every route, status and error code of the other.

const root = fileURLToPath(new URL('../../', import.meta.url));
const readme = readFileSync(`${root}README.md`, 'utf8');
const errorsPage = readPage('docs/reference/errors.md');
const contract = readPage('docs/agents/http-api.md');
const docs = documentationPages().map(readPage).join('\n');

/** Routes that exist only with `test_mode: true`; the approvers' API page says so. */
const TEST_MODE_ONLY = new Set(['POST /api/test/clock']);

type Operation = { responses?: Record<string, { content?: Record<string, { schema?: unknown }> }> };
type OpenApi = { openapi: string; paths: Record<string, Record<string, Operation>>; components?: { schemas?: Record<string, unknown> } };

/** `METHOD /path` as the docs write it, with `:param` for a path parameter. */
function routesInDocs(text: string): Set<string> {
  const found = new Set<string>();
  for (const match of text.matchAll(/\b(GET|POST|PUT|PATCH|DELETE) (\/[A-Za-z0-9_.:/{}-]*[A-Za-z0-9_}])/g)) {
    found.add(`${match[1]} ${match[2]!.replace(/\{(\w+)\}/g, ':$1')}`);
  }
  return found;
}

function routesInDocument(document: OpenApi): Set<string> {
  const found = new Set<string>();
  for (const [path, operations] of Object.entries(document.paths)) {
    for (const method of Object.keys(operations)) found.add(`${method.toUpperCase()} ${path.replace(/\{(\w+)\}/g, ':$1')}`);
  }
  return found;
}

/** Every error code the document says a route answers, with the status it is answered under. */
function errorCodesInDocument(document: OpenApi): Map<ErrorCode, Set<number>> {
  const found = new Map<ErrorCode, Set<number>>();
  const walk = (value: unknown, status: number): void => {
    if (Array.isArray(value)) for (const item of value) walk(item, status);
    else if (value !== null && typeof value === 'object') {
      const object = value as Record<string, unknown>;
      // A shape named once under components.schemas counts wherever a route refers to it; but not
      // Error, every error's shape, which lists every code: an answer lists its route's own.
      const named = typeof object.$ref === 'string' ? /^#\/components\/schemas\/(\w+)$/.exec(object.$ref)?.[1] : undefined;
      if (named !== undefined && named !== 'Error') walk(document.components?.schemas?.[named], status);
      const code = (object.properties as Record<string, { properties?: { code?: { enum?: string[] } } }> | undefined)?.error?.properties?.code?.enum;
      for (const c of code ?? []) {
        const known = c as ErrorCode;
        found.set(known, new Set([...(found.get(known) ?? []), status]));
      }
      for (const member of Object.values(object)) walk(member, status);
    }
  };
  for (const operations of Object.values(document.paths)) {
    for (const operation of Object.values(operations)) {
      for (const [status, answer] of Object.entries(operation.responses ?? {})) walk(answer, Number(status));
    }
  }
  return found;
}

function statusesInDocument(document: OpenApi): Set<number> {
  const found = new Set<number>();
  for (const operations of Object.values(document.paths)) {
    for (const operation of Object.values(operations)) for (const status of Object.keys(operation.responses ?? {})) found.add(Number(status));
  }
  return found;
}

/** Error codes the docs name in backticks. */
function errorCodesInDocs(text: string): Set<string> {
  return new Set([...text.matchAll(/`([a-z_]+)`/g)].map((m) => m[1]!).filter((code) => Object.hasOwn(ERROR_CODES, code)));
}

/** HTTP statuses the docs name in backticks: `202`, `409 …`. */
function statusesInDocs(text: string): Set<number> {
  return new Set([...text.matchAll(/`([1-5]\d\d)[\s`]/g)].map((m) => Number(m[1])));
}

let world: AppWorld;
let document: OpenApi;
beforeAll(async () => {
  world = await buildAppWorld();
  const answer = await world.app.inject({ method: 'GET', url: '/openapi.json' });
  expect(answer.statusCode).toBe(200);
  document = answer.json();
});
afterAll(() => world.close());

describe('the OpenAPI document and the docs agree', () => {
  it('is OpenAPI 3.1', () => {
    expect(document.openapi).toBe('3.1.0');
  });

  it('lists every route the docs and the contract doc name, and names no other', () => {
    const inDocs = routesInDocs(docs);
    const inDocument = routesInDocument(document);
    expect([...inDocs].filter((route) => !inDocument.has(route) && !TEST_MODE_ONLY.has(route)).sort()).toEqual([]);
    expect([...inDocument].filter((route) => !inDocs.has(route)).sort()).toEqual([]);
  });

  it('answers every error code the docs name, under the status the docs give it, and no other', () => {
    const inDocument = errorCodesInDocument(document);
    expect([...errorCodesInDocs(docs)].sort()).toEqual([...inDocument.keys()].sort());
    for (const [code, statuses] of inDocument) expect([code, [...statuses]]).toEqual([code, [ERROR_CODES[code]]]);
    // The errors page's table gives each code its status, and lists every code.
    const tabled = [...errorsPage.matchAll(/^\| `([a-z_]+)` \| `(\d{3})` \|/gm)];
    expect(tabled.map(([, code]) => code).sort()).toEqual(Object.keys(ERROR_CODES).sort());
    for (const [, code, status] of errorsPage.matchAll(/^\| `([a-z_]+)` \| `(\d{3})` \|/gm)) {
      expect([code, Number(status)]).toEqual([code, ERROR_CODES[code as ErrorCode]]);
    }
  });

  it('has every status the docs name, and the docs name every status it has', () => {
    const inDocument = statusesInDocument(document);
    expect([...statusesInDocs(docs)].filter((status) => !inDocument.has(status)).sort()).toEqual([]);
    const unnamed = [...inDocument].filter((status) => !statusesInDocs(docs).has(status) && status !== 101);
    expect(unnamed.sort()).toEqual([]);
  });

  it("the contract page's example answer has every field of the refund answer, and the page says what each is", () => {
    const fields = Object.keys(RefundAnswerSchema.properties).sort();
    const example = fencedBlocks(contract, 'json').find((block) => block.includes('"effect_id"') && block.includes('"approvals"'));
    expect(Object.keys(JSON.parse(example ?? '{}')).sort()).toEqual(fields);
    // Each field has its bullet under the example; `request_id` and `currency` have their own sections.
    const described = new Set([...contract.matchAll(/^- `([a-z_]+)`:|; `([a-z_]+)`:/gm)].map((m) => m[1] ?? m[2]));
    expect(fields.filter((field) => !described.has(field) && field !== 'request_id' && field !== 'currency')).toEqual([]);
  });

  it('the README links to the contract doc, which is in the project, and no page cites the spec beside it', () => {
    expect(readme).toContain('](docs/agents/http-api.md)');
    expect(docs).not.toContain('../shared/spec/');
    expect(contract).toMatch(/^# The HTTP API: the public contract/);
  });

  it('serves the document and the docs page, and the README says where', async () => {
    expect(readme).toContain('`GET /openapi.json`');
    expect(readme).toContain('`GET /docs`');
    const page = await world.app.inject({ method: 'GET', url: '/docs/' });
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('swagger-initializer.js');
    const pageDocument = await world.app.inject({ method: 'GET', url: '/docs/json' });
    expect(routesInDocument(pageDocument.json())).toEqual(routesInDocument(document));
  });
});

/** The statuses the document gives one operation, and the error codes it names under each. */
function answersOf(operation: Operation): Map<number, Set<string>> {
  const found = new Map<number, Set<string>>();
  for (const [status, answer] of Object.entries(operation.responses ?? {})) {
    const codes = (answer.content?.['application/json']?.schema as { properties?: { error?: { properties?: { code?: { enum?: string[] } } } } } | undefined)?.properties
      ?.error?.properties?.code?.enum;
    found.set(Number(status), new Set(codes ?? []));
  }
  return found;
}

describe('every path parameter, whatever its length, is answered as the document says', () => {
  // The longest id POST takes is 200 characters, and `/` and `:` are percent-encoded in a path.
  const segments = [
    ['the longest request id, with / and :', encodeURIComponent(`case:4471/${'x'.repeat(190)}`)],
    ['one past it', encodeURIComponent(`case:4471/${'x'.repeat(191)}`)],
    ['a kilobyte', 'y'.repeat(1_024)],
    ['a malformed %-escape', '%E0%A4%A'],
  ] as const;
  it.each(segments)('%s in each route with a path parameter answers a status and code the route lists', async (_name, segment) => {
    const fin = await world.login('fin');
    const answers: string[] = [];
    const undocumented: string[] = [];
    for (const [path, operations] of Object.entries(document.paths)) {
      if (!path.includes('{')) continue;
      for (const [method, operation] of Object.entries(operations)) {
        const url = path.replace(/\{\w+\}/g, segment);
        const body = method === 'post' ? {} : undefined;
        const answer = path.startsWith('/v1/')
          ? await world.agent(method.toUpperCase() as 'GET', url, body)
          : await world.as(fin, method.toUpperCase(), url, body);
        const code = answer.statusCode >= 400 ? answer.json().error.code : '';
        const listed = answersOf(operation).get(answer.statusCode);
        answers.push(`${method.toUpperCase()} ${path} ${answer.statusCode} ${code}`);
        if (listed === undefined || (code !== '' && !listed.has(code))) undocumented.push(`${method.toUpperCase()} ${path} ${answer.statusCode} ${code}`);
      }
    }
    expect(answers.length).toBeGreaterThan(5);
    expect(undocumented).toEqual([]);
  });
});

describe('what each route answers is what the document says it answers', () => {
  it('every GET route without a path parameter is served under the media type the document gives its answer', async () => {
    const fin = await world.login('fin');
    const served: string[] = [];
    for (const [path, operations] of Object.entries(document.paths)) {
      const operation = operations.get;
      if (operation === undefined || path.includes('{') || path === '/api/live') continue;
      const headers = path.startsWith('/v1/') ? { authorization: `Bearer ${AGENT_TOKEN}` } : { cookie: fin.cookie };
      const answer = await world.app.inject({ method: 'GET', url: path, headers });
      const mediaType = String(answer.headers['content-type']).split(';')[0];
      const documented = Object.keys(operation.responses?.[String(answer.statusCode)]?.content ?? {});
      served.push(`${path} ${answer.statusCode} ${mediaType} documented as ${documented.join(', ') || 'nothing'}`);
    }
    expect(served.length).toBeGreaterThan(10);
    expect(served.filter((line) => !/ (\S+) documented as \1$/.test(line))).toEqual([]);
  });

  it('the ledger CSV lists the filters it takes and not the paging it refuses', async () => {
    const fin = await world.login('fin');
    const parameters = (document.paths['/api/ledger.csv']!.get as { parameters?: { name: string }[] }).parameters ?? [];
    expect(parameters.map((parameter) => parameter.name).sort()).toEqual(['agent', 'currency', 'from_ms', 'group', 'outcome', 'status', 'to_ms']);
    const filtered = await world.as(fin, 'GET', '/api/ledger.csv?from_ms=&to_ms=&agent=&group=&status=&currency=&outcome=');
    expect(filtered.statusCode).toBe(200);
    for (const paging of ['cursor=abc', 'limit=10']) {
      const refused = await world.as(fin, 'GET', `/api/ledger.csv?${paging}`);
      expect([refused.statusCode, refused.json().error]).toEqual([400, { code: 'validation_failed', message: `${paging.split('=')[0]}: unknown field` }]);
    }
  });

  it('the live feed without a session, or without an upgrade, is answered as the document says', async () => {
    const fin = await world.login('fin');
    const live = answersOf(document.paths['/api/live']!.get!);
    const without = await world.app.inject({ method: 'GET', url: '/api/live' });
    expect([without.statusCode, without.json().error.code, live.get(401)?.has('unauthorized')]).toEqual([401, 'unauthorized', true]);
    expect(live.get(401)?.has('session_expired')).toBe(true);
    const plain = await world.as(fin, 'GET', '/api/live');
    expect([plain.statusCode, plain.json().error.code, live.get(plain.statusCode)?.has(plain.json().error.code)]).toEqual([400, 'validation_failed', true]);
  });
});

describe('a body that is not JSON is refused by its media type', () => {
  it.each(['text/plain', 'application/x-www-form-urlencoded'])(
    'a %s body is 415 unsupported_media_type on every route that takes a body, and nothing is written',
    async (type) => {
      const fin = await world.login('fin');
      const answers: string[] = [];
      const before = await world.entryCount();
      for (const [path, operations] of Object.entries(document.paths)) {
        // Stripe's webhooks are read raw, whatever their type, and judged by their signature.
        if (path.startsWith('/webhooks/')) continue;
        for (const [method, operation] of Object.entries(operations as Record<string, Operation & { requestBody?: unknown }>)) {
          if (operation.requestBody === undefined) continue;
          const url = path.replace(/\{\w+\}/g, '000000000000');
          const headers: Record<string, string> = path.startsWith('/v1/') || path === '/mcp'
            ? { authorization: `Bearer ${AGENT_TOKEN}` }
            : { cookie: fin.cookie, 'x-csrf-token': fin.csrf };
          const answer = await world.app.inject({ method: method.toUpperCase() as 'POST', url, headers: { ...headers, 'content-type': type }, payload: '{"a":1}' });
          const listed = answersOf(operation).get(415)?.has('unsupported_media_type') ? 'listed' : 'not listed';
          answers.push(`${method.toUpperCase()} ${path} ${answer.statusCode} ${answer.json().error?.code} ${listed}`);
        }
      }
      expect(answers.length).toBeGreaterThanOrEqual(4);
      expect(answers.filter((line) => !line.endsWith(' 415 unsupported_media_type listed'))).toEqual([]);
      expect(await world.entryCount()).toBe(before);
    },
  );
});

describe('bodies are checked against their schemas, nothing coerced or removed', () => {
  it.each([
    ['an unknown field', { request_id: 'c1', payment_intent: 'pi_abc', amount: 1500, memo: 'x' }, 'memo: unknown field'],
    ['an amount as a string', { request_id: 'c2', payment_intent: 'pi_abc', amount: '1500' }, 'amount: must be a whole number in the smallest currency unit (cents for USD, whole yen for JPY), from 1 to 99999999'],
    ['a flag as a number', { request_id: 'c3', payment_intent: 'pi_abc', amount: 1500, flags: [1] }, 'flags[0]: lowercase letters, digits, _ and -, at most 64'],
    ['flags as a string', { request_id: 'c4', payment_intent: 'pi_abc', amount: 1500, flags: 'vip' }, 'flags: must be a list of at most 20 flags; a set: order and repeats do not matter'],
    ['no amount', { request_id: 'c5', payment_intent: 'pi_abc' }, 'amount: required, must be a whole number in the smallest currency unit (cents for USD, whole yen for JPY), from 1 to 99999999'],
  ])('a refund with %s is 400 validation_failed naming the field, and nothing is written', async (_name, body, message) => {
    const before = await world.entryCount();
    const answer = await world.agent('POST', '/v1/refunds', body);
    expect([answer.statusCode, answer.json()]).toEqual([400, { error: { code: 'validation_failed', message } }]);
    expect(await world.entryCount()).toBe(before);
  });

  it('a login with an unknown field or a number for a name is refused naming the field', async () => {
    const login = (payload: object) => world.app.inject({ method: 'POST', url: '/api/session', payload });
    expect((await login({ name: 'ana', password: 'x', remember: true })).json().error).toEqual({ code: 'validation_failed', message: 'remember: unknown field' });
    expect((await login({ name: 7, password: 'x' })).json().error).toEqual({ code: 'validation_failed', message: 'name: text of at most 64 characters' });
  });

  it('a decision with a string repair index, or an index on an approval, is refused naming the field', async () => {
    const ana = await world.login('ana');
    const escalation = 'a'.repeat(64);
    const decide = (body: object) => world.as(ana, 'POST', '/api/items/000000000000/decisions', body);
    expect((await decide({ action: 'repair', escalation, repair_index: '0' })).json().error.message).toBe('repair_index: which repair to accept, from 0; only for action repair');
    expect((await decide({ action: 'approve', escalation, why: 'x' })).json().error.message).toBe('why: unknown field');
  });

  it('a malformed effect id in a path is no such item, as it always was', async () => {
    const answer = await world.agent('GET', '/v1/receipts/NOT-AN-ID');
    expect([answer.statusCode, answer.json().error.code]).toEqual([404, 'not_found']);
  });

  it('a malformed request id in a path is validation_failed naming it', async () => {
    const answer = await world.agent('GET', `/v1/refunds/${encodeURIComponent('no spaces')}`);
    expect([answer.statusCode, answer.json().error.message.startsWith('request_id: ')]).toEqual([400, true]);
  });
});

describe('context_url: the ticket or conversation behind a request', () => {
  it('is bound with the request and shown to approvers; another one under the same id is another payload', async () => {
    const pi = await world.payment(10_000);
    const url = 'https://support.example/tickets/4471?tab=conversation';
    const body = { request_id: 'ctx-1', payment_intent: pi, amount: 8_000, context_url: url };
    const first = await world.agent('POST', '/v1/refunds', body);
    expect([first.statusCode, first.json().status]).toEqual([202, 'QUEUED']);
    expect((await world.agent('POST', '/v1/refunds', body)).statusCode).toBe(202);
    const before = await world.entryCount();
    const other = await world.agent('POST', '/v1/refunds', { ...body, context_url: 'https://support.example/tickets/9' });
    expect([other.statusCode, other.json().recorded.context_url, other.json().offered.context_url]).toEqual([409, url, 'https://support.example/tickets/9']);
    const without = await world.agent('POST', '/v1/refunds', { request_id: 'ctx-1', payment_intent: pi, amount: 8_000 });
    expect(without.statusCode).toBe(409);
    expect(await world.entryCount()).toBe(before);
    const ana = await world.login('ana');
    const item = (await world.as(ana, 'GET', `/api/items/${first.json().effect_id}`)).json();
    expect(item.request.context_url).toBe(url);
  });

  it.each([
    ['another scheme', 'javascript:alert(1)'],
    ['ftp', 'ftp://files.example/x'],
    ['a space', 'https://a.example/x y'],
    ['more than 2,000 characters', `https://a.example/${'x'.repeat(2_000)}`],
  ])('%s is refused naming the field', async (_name, contextUrl) => {
    const answer = await world.agent('POST', '/v1/refunds', { request_id: 'ctx-bad', payment_intent: 'pi_abc', amount: 100, context_url: contextUrl });
    expect([answer.statusCode, answer.json().error.code, answer.json().error.message.startsWith('context_url: ')]).toEqual([400, 'validation_failed', true]);
  });
});
