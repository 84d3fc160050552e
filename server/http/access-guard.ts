import type { FastifyInstance, FastifyRequest, RouteOptions } from 'fastify';
import { type Ask, allows, type Person, type Resource } from '../access/rules.ts';
import { AppError } from './errors.ts';

/**
 * What a route declares of who may call it: a question for the access rules (server/access/rules.ts),
 * asked of the signed-in person before its handler runs; `signedIn`, any signed-in person about
 * their own session, with why; or `public` with why it needs no person (it checks a token or a
 * signature of its own, or shows nothing of anyone's).
 */
export type RouteAccess = Ask | { signedIn: string } | { public: string };

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Who may call the route: every route declares it, or the app refuses to start (access-guard.ts). */
    access?: RouteAccess;
  }
}

/** What a person is told when their role may never ask this, by resource. */
const REFUSED: Readonly<Record<Resource, string>> = {
  item: 'your role reads no items',
  decision: 'only approvers decide; finance reads the inbox and its history',
  ledger_row: 'only finance and approvers read the ledger',
  receipt: 'only finance and approvers read receipts',
  scoreboard_breakdown: 'only finance and approvers read the scoreboard',
  reconciliation: "reconciliation is finance's: it compares every group's refunds with Stripe",
  live_feed: 'your role hears no live feed',
  payment_panel: 'your role reads no payments',
  export: 'only finance and approvers download the ledger and the scoreboard',
  directory: 'your role reads no directory',
};

/** A route's declared question for the access rules; an assertion for a public route (our bug). */
export function askOf(request: FastifyRequest): Ask {
  const access = request.routeOptions.config.access;
  if (access === undefined || !('resource' in access)) throw new Error(`${request.method} ${request.url} asks the access rules but declares no question`);
  return access;
}

/** The signed-in person of a route behind a session; an assertion when there is none (a route outside the session scope is our bug). */
export function personOf(request: FastifyRequest): Person & NonNullable<FastifyRequest['person']> {
  const person = request.person;
  if (person === undefined) throw new Error(`${request.method} ${request.url} asks the access rules outside the session scope`);
  return person;
}

/** Refuse, before anything is looked up, a person whose role may never ask the route's question. */
async function checkAccess(request: FastifyRequest): Promise<void> {
  const ask = askOf(request);
  if (!allows(personOf(request), ask)) throw new AppError('forbidden', REFUSED[ask.resource]);
}

/** A route for any signed-in person: one registered outside the session scope is our bug, said loudly. */
async function checkSignedIn(request: FastifyRequest): Promise<void> {
  personOf(request);
}

/** One route as declared: method(s), URL and access, for the start-up check and the tests. */
export interface DeclaredRoute {
  method: string;
  url: string;
  access: RouteAccess | undefined;
}

/**
 * Every route must say who may call it. Routes are recorded as they are added (an access question
 * gets the check as its last preHandler, after the session and the journal's scope); once all are
 * added, a route that declared nothing stops the app from starting, naming it.
 */
export function requireDeclaredAccess(app: FastifyInstance): () => DeclaredRoute[] {
  const routes: RouteOptions[] = [];
  app.addHook('onRoute', (route) => {
    routes.push(route);
    const access = route.config?.access;
    if (access === undefined || 'public' in access) return;
    const before = route.preHandler === undefined ? [] : Array.isArray(route.preHandler) ? route.preHandler : [route.preHandler];
    route.preHandler = [...before, 'resource' in access ? checkAccess : checkSignedIn];
  });
  const declared = () =>
    routes.map((route) => ({ method: [route.method].flat().join(','), url: route.url, access: route.config?.access }));
  app.addHook('onReady', async () => {
    const undeclared = declared().filter((route) => route.access === undefined);
    if (undeclared.length > 0) {
      throw new Error(`routes that do not say who may call them (config.access): ${undeclared.map((r) => `${r.method} ${r.url}`).join('; ')}`);
    }
  });
  return declared;
}

/**
 * Routes added by a plugin we do not write (the API reference page, the web inbox's files) are
 * public, said once for its scope: registered inside `scope`, each is declared public with `why`.
 */
export function declarePublic(scope: FastifyInstance, why: string): void {
  scope.addHook('onRoute', (route) => {
    if (route.config?.access === undefined) route.config = { ...route.config, access: { public: why } };
  });
}
