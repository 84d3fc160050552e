import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { register } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { createConfig, lintFromString } from '@redocly/openapi-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COMPONENT_SCHEMAS } from '../../server/http/openapi-components.ts';
import { serversOf } from '../../server/http/openapi-publish.ts';
import { type AppWorld, buildAppWorld } from '../support/app-world.ts';

// The published document is read by code generators: every operation named, shared shapes under
// components.schemas, where the server is, who may call what, the callback, Retry-After, and
// patterns any engine compiles. Redocly's recommended rules find no error in it, and
// openapi-typescript's types from it type-check a program that uses them.

const root = fileURLToPath(new URL('../../', import.meta.url));
const contract = readFileSync(join(root, 'docs/agents/http-api.md'), 'utf8');

type Json = Record<string, unknown>;
type Operation = Json & { operationId?: string; security?: unknown; responses?: Record<string, Json>; callbacks?: Json };
type OpenApi = Json & { paths: Record<string, Record<string, Operation>>; components: Json & { schemas: Record<string, Json> }; servers?: { url: string }[] };

const METHODS = new Set(['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace']);

function operationsOf(document: OpenApi): [string, Operation][] {
  return Object.entries(document.paths).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([method]) => METHODS.has(method))
      .map(([method, operation]): [string, Operation] => [`${method.toUpperCase()} ${path}`, operation]),
  );
}

/** Every value under `value` whose key is `key`, with the JSON pointer to it. */
function valuesOf(value: unknown, key: string, pointer = ''): [string, unknown][] {
  if (Array.isArray(value)) return value.flatMap((item, i) => valuesOf(item, key, `${pointer}/${i}`));
  if (value === null || typeof value !== 'object') return [];
  return Object.entries(value).flatMap(([name, member]) => [
    ...(name === key ? [[`${pointer}/${name}`, member] as [string, unknown]] : []),
    ...valuesOf(member, key, `${pointer}/${name}`),
  ]);
}

/** What regular-expression engines have in common (ECMA-262 without `u`, PCRE, RE2, Python): no property escapes, no lookaround, no back-references, no \u. */
function nonPortable(pattern: string): string | null {
  if (/\\[pPkuUx]/.test(pattern)) return 'a \\p, \\P, \\k, \\u or \\x escape';
  if (/\(\?[=!<]/.test(pattern)) return 'a lookahead, lookbehind or named group';
  if (/\\[1-9]/.test(pattern)) return 'a back-reference';
  return null;
}

let world: AppWorld;
let document: OpenApi;
beforeAll(async () => {
  world = await buildAppWorld();
  const served = await world.app.inject({ method: 'GET', url: '/openapi.json' });
  expect(served.statusCode).toBe(200);
  document = served.json();
});
afterAll(() => world.close());

describe('every operation has a stable name', () => {
  it('each has a camelCase operationId of its own, and the contract page tables them all', () => {
    const named = operationsOf(document).map(([route, operation]) => [route, operation.operationId ?? ''] as const);
    expect(named.length).toBeGreaterThan(30);
    expect(named.filter(([, id]) => !/^[a-z][A-Za-z0-9]*$/.test(id)).map(([route]) => route)).toEqual([]);
    const ids = named.map(([, id]) => id);
    expect(ids.filter((id, i) => ids.indexOf(id) !== i)).toEqual([]);
    const tabled = new Map([...contract.matchAll(/^\| `([a-zA-Z]+)` \| `([A-Z]+ [^`]+)` \|/gm)].map((m) => [m[2]!, m[1]!]));
    expect(Object.fromEntries(named.map(([route]) => [route, tabled.get(route.replace(/\{(\w+)\}/g, ':$1'))]))).toEqual(
      Object.fromEntries(named.map(([route, id]) => [route, id])),
    );
  });
});

describe('shared shapes are components', () => {
  it('the refund shapes are named PascalCase components, every $ref resolves, and none is a generated def-N', () => {
    const names = Object.keys(document.components.schemas);
    expect(names).toEqual(expect.arrayContaining(['RefundRequest', 'RefundAnswer', 'ConflictingPayload', 'Error', 'Receipt', 'VerifyReport', 'LedgerRow']));
    expect(names.filter((name) => !/^[A-Z][A-Za-z0-9]*$/.test(name))).toEqual([]);
    const refs = valuesOf(document, '$ref').map(([, ref]) => String(ref));
    const missing = refs.filter((ref) => {
      const [, kind, name] = /^#\/components\/(\w+)\/([A-Za-z0-9]+)$/.exec(ref) ?? [];
      return kind === undefined || (document.components[kind] as Json | undefined)?.[name!] === undefined;
    });
    expect(missing).toEqual([]);
    const create = document.paths['/v1/refunds']!.post!;
    expect(valuesOf(create, '$ref').map(([, ref]) => ref)).toEqual(expect.arrayContaining(['#/components/schemas/RefundRequest', '#/components/schemas/RefundAnswer']));
    // Every JSON error answer is also an Error, the one error type a client gets.
    const errorsWithout = operationsOf(document).flatMap(([route, operation]) =>
      Object.entries(operation.responses ?? {})
        .filter(([status, answer]) => {
          // A named error shape (ConflictingPayload, NotReady) is its own $ref; every other error refers to Error.
          const schema = ((answer.content as Json | undefined)?.['application/json'] as Json | undefined)?.schema as Json | undefined;
          return Number(status) >= 400 && schema !== undefined && schema.$ref === undefined && !JSON.stringify(schema).includes('"#/components/schemas/Error"');
        })
        .map(([status]) => `${route} ${status}`),
    );
    expect(errorsWithout).toEqual([]);
    expect(valuesOf(document.paths['/v1/refunds']!.post!.responses!['400'], '$ref').map(([, ref]) => ref)).toEqual(['#/components/schemas/Error']);
    // Only the document's copy is named: the schemas the server validates and answers with are untouched.
    expect(Object.values(COMPONENT_SCHEMAS).filter((schema) => 'title' in schema || '$id' in schema)).toEqual([]);
    // Each named shape is used: none is listed for nothing.
    expect(names.filter((name) => !refs.includes(`#/components/schemas/${name}`))).toEqual([]);
  });
});

describe('what a client needs besides the shapes', () => {
  it('names the server, and says for each operation who may call it', () => {
    expect(document.servers).toEqual([{ url: '/', description: 'the server this document was read from' }]);
    expect(serversOf('https://refunds.example/interlock/')).toEqual([{ url: 'https://refunds.example/interlock', description: "the config's public_url" }]);
    const schemes = Object.keys(document.components.securitySchemes as Json);
    const unsaid = operationsOf(document).filter(([, operation]) => !Array.isArray(operation.security));
    expect(unsaid.map(([route]) => route)).toEqual([]);
    const schemeOf = (route: string) => (document.paths[route.split(' ')[1]!]![route.split(' ')[0]!.toLowerCase()]!.security as Json[]).flatMap(Object.keys);
    expect([schemeOf('POST /v1/refunds'), schemeOf('GET /api/inbox'), schemeOf('GET /healthz'), schemeOf('POST /api/session')]).toEqual([['agentToken'], ['session'], [], []]);
    const used = operationsOf(document).flatMap(([, operation]) => (operation.security as Json[]).flatMap(Object.keys));
    expect(used.filter((scheme) => !schemes.includes(scheme))).toEqual([]);
  });

  it('declares Retry-After on every 429, 202 and 503', () => {
    const without = operationsOf(document).flatMap(([route, operation]) =>
      Object.entries(operation.responses ?? {})
        .filter(([status, answer]) => ['429', '202', '503'].includes(status) && (answer.headers as Json | undefined)?.['Retry-After'] === undefined)
        .map(([status]) => `${route} ${status}`),
    );
    expect(without).toEqual([]);
    expect(document.paths['/v1/refunds']!.post!.responses!['429']!.headers).toEqual({ 'Retry-After': { $ref: '#/components/headers/RetryAfter' } });
  });

  it('gives createRefund the callback: the refund answer, signed, with its message id', () => {
    const callback = document.paths['/v1/refunds']!.post!.callbacks as Record<string, Record<string, { post: Operation & { parameters: Json[]; requestBody: Json } }>>;
    const post = Object.values(callback.refundFinal!)[0]!.post;
    expect(post.parameters.map((parameter) => [parameter.name, parameter.in, parameter.required])).toEqual([
      ['Interlock-Message-Id', 'header', true],
      ['Interlock-Signature', 'header', true],
    ]);
    expect(valuesOf(post.requestBody, '$ref').map(([, ref]) => ref)).toEqual(['#/components/schemas/RefundAnswer']);
  });

  it('publishes only patterns every common engine compiles, and the server still refuses a lone surrogate', async () => {
    const patterns = valuesOf(document, 'pattern').filter(([, pattern]) => typeof pattern === 'string') as [string, string][];
    expect(patterns.length).toBeGreaterThan(10);
    const refused = patterns.flatMap(([pointer, pattern]) => {
      try {
        new RegExp(pattern);
      } catch (error) {
        return [`${pointer} ${pattern}: ${(error as Error).message}`];
      }
      const why = nonPortable(pattern);
      return why === null ? [] : [`${pointer} ${pattern}: ${why}`];
    });
    expect(refused).toEqual([]);
    // The check the portable subset catches, so it can fail.
    expect([nonPortable('^\\P{Cs}*$'), nonPortable('^(?<!a)b$'), nonPortable('^[a-z]+$')]).toEqual(['a \\p, \\P, \\k, \\u or \\x escape', 'a lookahead, lookbehind or named group', null]);
    const answer = await world.agent('POST', '/v1/refunds', { request_id: 'surrogate-1', payment_intent: 'pi_abc', amount: 100, reason: 'a \ud800' });
    expect([answer.statusCode, answer.json().error.message.startsWith('reason: ')]).toEqual([400, true]);
  });
});

describe("generators' own checks", () => {
  it("has no error under Redocly's recommended rules, and the warnings left are the ones the contract page explains", async () => {
    const config = await createConfig({ extends: ['recommended'] });
    const problems = await lintFromString({ source: JSON.stringify(document), absoluteRef: '/openapi.json', config });
    const found = problems.map((problem) => `${problem.severity} ${problem.ruleId} ${problem.location[0]?.pointer ?? ''}`).sort();
    expect(found.filter((line) => line.startsWith('error'))).toEqual([]);
    const explained = [...contract.matchAll(/^\| `([a-z0-9-]+)` \| `(#[^`]*)` \|/gm)].map((m) => `warn ${m[1]} ${m[2]}`).sort();
    expect(found).toEqual(explained);
  });

  it('openapi-typescript makes types from the served document that a program type-checks against', { timeout: 60_000 }, async () => {
    const generated = await generateTypes(document);
    const dir = mkdtempSync(join(tmpdir(), 'interlock-oas-'));
    try {
      writeFileSync(join(dir, 'api.d.ts'), generated);
      writeFileSync(join(dir, 'use.ts'), USE_PROGRAM);
      writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify(TSCONFIG));
      const result = await promisify(execFile)(join(root, 'node_modules/typescript/bin/tsc'), ['-p', dir]).then(
        () => 'clean',
        (error: { stdout?: string }) => error.stdout ?? String(error),
      );
      expect(result).toBe('clean');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("the project's type-checks run TypeScript 7 by path: the TypeScript 5 installed for openapi-typescript has the same command", () => {
    // A fresh `npm ci` links node_modules/.bin/tsc to typescript (first by path), but an in-place
    // `npm install` may link it to typescript-5: nothing of the project's runs it by that name.
    expect(JSON.parse(readFileSync(join(root, 'node_modules/typescript/package.json'), 'utf8')).version).toMatch(/^7\./);
    const scripts = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).scripts as Record<string, string>;
    expect(scripts.typecheck).toBe('node node_modules/typescript/bin/tsc --noEmit -p .');
    for (const file of ['scripts/test.sh', 'scripts/build-packages.ts', 'test/packages/install.test.ts', 'test/client/readme-example.test.ts']) {
      const text = readFileSync(join(root, file), 'utf8');
      expect(text, file).toContain('node_modules/typescript/bin/tsc');
      expect(text, file).not.toMatch(/npx tsc|'node_modules\/\.bin\/tsc'/);
    }
  });
});

/** A client's use of the types: the request body, the answer, the operation, and one mistake the types must refuse. */
const USE_PROGRAM = `import type { components, operations, paths } from './api';

type CreateBody = paths['/v1/refunds']['post']['requestBody']['content']['application/json'];
type Answer = components['schemas']['RefundAnswer'];
type Created = operations['createRefund']['responses'][200]['content']['application/json'];

export const body: CreateBody = { request_id: 'case-4471', payment_intent: 'pi_123', amount: 2000, flags: ['vip'] };
export const same: Answer extends Created ? (Created extends Answer ? true : false) : false = true;
export const statusOf = (answer: Answer): string => \`\${answer.request_id} \${answer.status} \${answer.refund ?? 'not sent'}\`;
export const conflict = (answer: operations['createRefund']['responses'][409]['content']['application/json']) => answer.recorded.amount;
// @ts-expect-error the amount is a number of the smallest unit, never a string
export const wrong: CreateBody = { request_id: 'case-1', payment_intent: 'pi_123', amount: '2000' };
`;

const TSCONFIG = {
  // ES5's library only, unchecked: the types need no more, and the DOM's would triple the time.
  compilerOptions: { strict: true, noEmit: true, target: 'es2022', lib: ['es5'], module: 'esnext', moduleResolution: 'bundler', skipDefaultLibCheck: true, types: [] },
  files: ['use.ts'],
};

/**
 * openapi-typescript builds its types with TypeScript 5's compiler API, which TypeScript 7 (the
 * project's tsc) does not have: its import of `typescript` is given the TypeScript 5 installed as
 * `typescript-5`, and only its own.
 */
async function generateTypes(openapi: OpenApi): Promise<string> {
  const hook = `export async function resolve(specifier, context, next) {
    if (specifier === 'typescript' && context.parentURL?.includes('/node_modules/openapi-typescript/')) return next('typescript-5', context);
    return next(specifier, context);
  }`;
  register(`data:text/javascript,${encodeURIComponent(hook)}`, import.meta.url);
  const { default: openapiTS, astToString } = await import('openapi-typescript');
  return astToString(await openapiTS(openapi as never));
}
