import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROLES } from '../../shared/api.ts';
import { everyAsk, reachOf } from '../../server/access/rules.ts';
import Fastify from 'fastify';
import { requireDeclaredAccess, type RouteAccess } from '../../server/http/access-guard.ts';
import { type AppWorld, buildAppWorld } from '../support/app-world.ts';

// Every route says who may call it, and the app does not start when one does not: the routes are
// walked as the app registered them, and each must ask the access rules (server/access/rules.ts)
// unless it is in the short list of public routes below, each with its own check or none needed.

/** Every route but the API reference page's, with the question it asks (HEAD mirrors its GET). */
const ROUTES: ReadonlyArray<readonly [string, string, 'public' | 'signedIn' | `${string} ${string}`]> = [
  ['GET', '/openapi.json', 'public'],
  ['GET', '/healthz', 'public'],
  ['GET', '/readyz', 'public'],
  ['GET', '/metrics', 'public'],
  ['GET', '/.well-known/interlock-keys', 'public'],
  ['GET', '/.well-known/interlock-checkpoint', 'public'],
  ['POST', '/v1/refunds', 'public'],
  ['GET', '/v1/refunds/:request_id', 'public'],
  ['GET', '/v1/receipts/:effect_id', 'public'],
  ['GET', '/v1/receipts/:effect_id/verify', 'public'],
  // MCP for hosted agents: the agent's token is checked before the protocol is read; GET and DELETE are 405.
  ['POST', '/mcp', 'public'],
  ['GET', '/mcp', 'public'],
  ['DELETE', '/mcp', 'public'],
  ['POST', '/api/session', 'public'],
  ['GET', '/api/session', 'signedIn'],
  ['DELETE', '/api/session', 'signedIn'],
  ['GET', '/api/directory', 'directory list'],
  ['GET', '/api/inbox', 'item list'],
  ['GET', '/api/done', 'item list'],
  ['GET', '/api/closed', 'item list'],
  ['GET', '/api/items/:effect_id', 'item read'],
  ['GET', '/api/items/:effect_id/receipt', 'receipt read'],
  ['POST', '/api/items/:effect_id/decisions', 'decision make'],
  ['GET', '/api/live', 'live_feed join'],
  ['GET', '/api/scoreboard', 'scoreboard_breakdown read'],
  ['GET', '/api/scoreboard.csv', 'export download'],
  ['GET', '/api/scoreboard/series', 'scoreboard_breakdown read'],
  ['GET', '/api/ledger', 'ledger_row list'],
  ['GET', '/api/ledger/totals', 'ledger_row list'],
  ['GET', '/api/ledger.csv', 'export download'],
  ['GET', '/api/ledger/:effect_id/receipt', 'receipt read'],
  ['POST', '/api/reconciliation', 'reconciliation start'],
  ['GET', '/api/reconciliation', 'reconciliation read'],
  ['GET', '/api/reconciliation/:run_id', 'reconciliation read'],
  ['POST', '/api/test/clock', 'signedIn'],
  ['POST', '/webhooks/stripe', 'public'],
];

const DOCS = '/docs';

function said(access: RouteAccess | undefined): string {
  if (access === undefined) return 'nothing';
  if ('public' in access) return 'public';
  if ('signedIn' in access) return 'signedIn';
  return `${access.resource} ${access.verb}`;
}

let world: AppWorld;
beforeAll(async () => {
  world = await buildAppWorld();
  await world.app.ready();
});
afterAll(async () => {
  await world?.close();
});

describe('every route says who may call it', () => {
  it('each route, as registered, asks the question in the table; only the listed ones are public', () => {
    const routes = world.app.declaredRoutes().filter((r) => r.url !== DOCS && !r.url.startsWith(`${DOCS}/`));
    const gets = new Map(routes.filter((r) => r.method === 'GET').map((r) => [r.url, said(r.access)]));
    // Fastify adds a HEAD beside each GET: it asks what its GET asks.
    for (const head of routes.filter((r) => r.method === 'HEAD')) expect([head.url, said(head.access)]).toEqual([head.url, gets.get(head.url)]);
    const line = (method: string, url: string, asked: string) => `${method} ${url}: ${asked}`;
    expect(routes.filter((r) => r.method !== 'HEAD').map((r) => line(r.method, r.url, said(r.access))).sort()).toEqual(ROUTES.map((r) => line(...r)).sort());
  });

  it('every public route says why it needs no person, and the API reference page is public as a whole', () => {
    const routes = world.app.declaredRoutes();
    for (const route of routes) {
      const access = route.access;
      if (access !== undefined && 'public' in access) expect(access.public.length, `${route.method} ${route.url}`).toBeGreaterThan(10);
    }
    const docs = routes.filter((r) => r.url === DOCS || r.url.startsWith(`${DOCS}/`));
    expect(docs.length).toBeGreaterThan(0);
    expect(new Set(docs.map((r) => said(r.access)))).toEqual(new Set(['public']));
  });

  it('under /api, only logging in is public: every other route needs a person, and all but their own session ask the rules', () => {
    const api = world.app.declaredRoutes().filter((r) => r.url.startsWith('/api/'));
    expect(api.filter((r) => said(r.access) === 'public').map((r) => `${r.method} ${r.url}`)).toEqual(['POST /api/session']);
    expect(api.filter((r) => said(r.access) === 'signedIn').map((r) => r.url)).toEqual(['/api/session', '/api/session', '/api/session', '/api/test/clock']);
  });

  it('a route added without saying who may call it stops the app from starting, named', async () => {
    // The check the app is built with (its routes are walked above through it), on an app of one route.
    const app = Fastify();
    requireDeclaredAccess(app);
    app.get('/api/asks', { config: { access: { resource: 'item', verb: 'list' } } }, async () => ({ ok: true }));
    app.get('/api/forgotten', async () => ({ ok: true }));
    await expect(app.ready()).rejects.toThrow(/routes that do not say who may call them \(config\.access\): GET \/api\/forgotten; HEAD \/api\/forgotten$/);
    await app.close().catch(() => {});
  });

  it('a role the rules refuse is answered 403 forbidden by every route that asks, before anything is looked up', async () => {
    const people = { approver: await world.login('ana'), finance: await world.login('fin') } as const;
    const refused: string[] = [];
    for (const [method, url, asked] of ROUTES) {
      if (asked === 'public' || asked === 'signedIn') continue;
      const ask = everyAsk().find((a) => `${a.resource} ${a.verb}` === asked);
      if (ask === undefined) throw new Error(`${method} ${url} asks ${asked}, which the rules do not know`);
      for (const role of ROLES) {
        if (reachOf(role, ask) !== 'none') continue;
        const path = url.replace(':effect_id', '0123456789ab').replace(':run_id', 'rec_0123456789abcdef');
        const body = method !== 'POST' ? undefined : url.endsWith('/decisions') ? { action: 'approve', escalation: 'e'.repeat(64) } : { from_ms: 0, to_ms: 1_000 };
        const answer = await world.as(people[role], method, path, body);
        expect([method, path, role, answer.statusCode, answer.json().error?.code]).toEqual([method, path, role, 403, 'forbidden']);
        refused.push(`${role} ${method} ${url}`);
      }
    }
    expect(refused).toEqual([
      'finance POST /api/items/:effect_id/decisions',
      'approver POST /api/reconciliation',
      'approver GET /api/reconciliation',
      'approver GET /api/reconciliation/:run_id',
    ]);
  });

  it("the config's groups are read at each request: someone taken out of a group reads none of it at their next request", async () => {
    const ana = await world.login('ana');
    const groups = world.services.config.groups;
    const before = groups['ap-leads']!;
    expect((await world.as(ana, 'GET', '/api/scoreboard?group=ap-leads')).statusCode).toBe(200);
    expect((await world.as(ana, 'GET', '/api/session')).json().groups).toEqual(['ap-leads']);
    groups['ap-leads'] = before.filter((name) => name !== 'ana');
    try {
      expect((await world.as(ana, 'GET', '/api/scoreboard?group=ap-leads')).json().error.code).toBe('forbidden');
      expect((await world.as(ana, 'GET', '/api/session')).json().groups).toEqual([]);
    } finally {
      groups['ap-leads'] = before;
    }
  });
});
