import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import fastifyCookie from '@fastify/cookie';
import fastifyHelmet from '@fastify/helmet';
import fastifyStatic from '@fastify/static';
import fastifyWebsocket from '@fastify/websocket';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import type { NetworkConfig } from '../config/schema.ts';
import { limits } from '../../shared/limits.ts';
import { NotReadySchema, PublicKeySetSchema, responses } from '../../shared/schemas.ts';
import { Type } from 'typebox';
import { webhookRoutes } from '../confirm/webhook-plugin.ts';
import { publicKeySet } from '../receipts/keys.ts';
import type { Services } from '../app/services.ts';
import { agentGuard, agentOfAuthorization } from './agent-guard.ts';
import { agentRoutes } from './agent-routes.ts';
import { mcpRoute } from './mcp-route.ts';
import { declarePublic, type DeclaredRoute, requireDeclaredAccess } from './access-guard.ts';
import { approverRoutes } from './approver-routes.ts';
import { checkpointRoute } from './checkpoint-route.ts';
import { AppError, installErrorHandler } from './errors.ts';
import { requireJournal, type StartGate } from './journal-scope.ts';
import { liveRoute } from './live-route.ts';
import { installMetrics } from './metrics-route.ts';
import { openApi } from './openapi.ts';
import { installOverloadShedding } from './overload.ts';
import { reconciliationRoutes } from './reconciliation-routes.ts';
import { scoreboardRoutes } from './scoreboard-routes.ts';
import { ledgerRoutes } from './ledger-routes.ts';
import { installFramingChecks } from './framing-checks.ts';
import { type GracefulStop, installGracefulStop } from './graceful-stop.ts';
import { echoRequestIds, newRequestId, REQUEST_ID_HEADER, REQUEST_ID_OPTIONS } from './request-ids.ts';
import { isServedHost, servedHosts } from './served-hosts.ts';
import { INTERLOCK_VERSION } from '../journal/version.ts';
import { installSessionAuth, loginRoute, sessionRoutes } from './session-routes.ts';
import type { SessionStore } from '../sessions/sessions.ts';
import { testRoutes } from './test-routes.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route answers whatever Host a request names (liveness, probed by address). */
    anyHost?: boolean;
  }
  interface FastifyInstance {
    /** Every route added, with who may call it (access-guard.ts): for the tests that walk them. */
    declaredRoutes: () => DeclaredRoute[];
    /** How the app stops taking requests and answers those it took (graceful-stop.ts). */
    gracefulStop: GracefulStop;
  }
}

/** Where `vite build` puts the React inbox. */
export const WEB_DIST = fileURLToPath(new URL('../../dist/web/', import.meta.url));

/** Content security for the pages: our own scripts and styles only, live updates over our websocket. */
const PAGE_CSP =
  "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; " +
  "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/** What `/readyz` says while the derived tables are rebuilt at start. */
const REBUILDING_MESSAGE = "the views' derived tables are being rebuilt from the journal; ready once done";

/** Everything that is not a page of the web inbox. */
const API_PATHS = /^\/(api|v1|mcp|webhooks|\.well-known|healthz|readyz|metrics|openapi\.json)(\/|\?|$)/;

/**
 * Whether a URL is the API's, read as the router reads it: `/%61pi/session` is routed to
 * `/api/session`, so it gets the API's headers, and an unknown `/%61pi/x` a JSON 404, never the page.
 */
function isApiPath(url: string): boolean {
  try {
    return API_PATHS.test(decodeURIComponent(url));
  } catch {
    return API_PATHS.test(url);
  }
}

/**
 * How every route's schema is checked: nothing coerced (`"1500"` is not an amount), nothing
 * removed (an unknown field is refused, never dropped), and the field's own schema kept on each
 * refusal so its description becomes the message.
 */
const AJV_OPTIONS = { removeAdditional: false, coerceTypes: false, useDefaults: false, allErrors: false, verbose: true } as const;

export interface AppOptions {
  services: Services;
  sessions: SessionStore;
  webhookSecrets: readonly string[];
  /** Whether `/readyz` answers ready: true once start-up recovery has finished. */
  ready: () => boolean;
  /** What journal routes wait for while start-up checks the journal behind a listening server (journal-scope.ts). */
  startGate?: StartGate;
  /** Cookies only over https (default: when the config's public_url is https). */
  secureCookies?: boolean;
  /** The address the server listens on (`HOST`): a name it answers to besides the config's. */
  listenHost?: string;
  logger?: boolean | object;
  webDist?: string;
  /** Agents' refund requests worked on at once before 429, shed before any work (default limits.refundsInFlightMax). */
  refundsInFlightMax?: number;
  /** Of those, the ones worked on at once; the rest wait their turn (default limits.refundsWorkingMax). */
  refundsWorkingMax?: number;
}

/**
 * A URL that cannot even be read (a bad percent-escape, a path parameter past the router's bound)
 * is still answered in the contract's shape, before any route sees it: every route with a path
 * parameter lists 400 validation_failed for it.
 */
const unreadableUrl: FastifyServerOptions['frameworkErrors'] = (error, request, reply) => {
  const message =
    error.code === 'FST_ERR_MAX_PARAM_LENGTH'
      ? `the URL could not be read: a path parameter is longer than ${limits.pathParamCharsMax} characters`
      : 'the URL could not be read (a malformed %-escape?)';
  const body = JSON.stringify({ error: { code: 'validation_failed', message } });
  reply.hijack();
  // No hook runs for it, so the headers every answer carries are set here: its request id first.
  reply.raw.writeHead(400, {
    'content-type': 'application/json; charset=utf-8',
    [REQUEST_ID_HEADER]: request.id,
    'x-content-type-options': 'nosniff',
    'x-frame-options': 'DENY',
    'referrer-policy': 'no-referrer',
    'content-security-policy': "default-src 'none'; frame-ancestors 'none'",
    'cache-control': 'no-store',
  });
  reply.raw.end(body);
};

/**
 * Whose word on the client's address is believed. A number of proxies is the hops nearest the
 * server, whatever their addresses (Fastify believes no one for a bare number): for a server
 * reachable only through its proxies, such as one listening on 127.0.0.1 behind a proxy on the
 * same machine.
 */
function trustProxyOf(trust: NetworkConfig['trustProxy']): NonNullable<FastifyServerOptions['trustProxy']> {
  if (typeof trust !== 'number') return trust;
  return (_address: string, hop: number) => hop < trust;
}

/** Whether browsers are told to keep to https, and cookies kept from plain http: when the config's public_url is https. */
function isHttps(services: Services): boolean {
  return services.config.notifications.publicUrl?.startsWith('https://') ?? false;
}

/**
 * The Fastify app, built but not listening: `main.ts` listens, tests use `inject`. Each audience
 * is its own encapsulated plugin with its own authentication; no decision logic lives here.
 */
export async function buildApp(options: AppOptions): Promise<FastifyInstance> {
  const { services, sessions } = options;
  const app = Fastify({
    logger: options.logger ?? false,
    ...REQUEST_ID_OPTIONS,
    bodyLimit: limits.bodyBytesMax,
    trustProxy: trustProxyOf(services.config.network.trustProxy),
    connectionTimeout: limits.connectionIdleMs,
    // Between requests on a kept-alive connection Node closes it after keepAliveTimeout instead
    // (Fastify's default 72 s): the same idle limit for both.
    keepAliveTimeout: limits.connectionIdleMs,
    requestTimeout: limits.requestReceiveMs,
    maxRequestsPerSocket: limits.requestsPerConnectionMax,
    // No Host on HTTP/1.1 is refused in the contract's shape (framing-checks.ts), never Node's bare 400.
    http: { maxHeaderSize: limits.headerBytesMax, requireHostHeader: false },
    // Fastify's default of 100 refused a request id of 101 to 200 characters in GET
    // /v1/refunds/:request_id after POST had taken it; each route's schema judges its ids.
    routerOptions: { maxParamLength: limits.pathParamCharsMax },
    ajv: { customOptions: AJV_OPTIONS },
    frameworkErrors: unreadableUrl,
    // A request that comes while the server stops is answered in the contract's shape (graceful-stop.ts), never Fastify's own 503.
    return503OnClosing: false,
    // A request Node cannot parse (malformed chunked framing, bad headers) never reaches Fastify:
    // it is answered here, in the same shape, and the connection closed.
    // Its headers were not read, so its id is a new one.
    clientErrorHandler: (_error, socket) => {
      const body = JSON.stringify({ error: { code: 'validation_failed', message: 'the request is not readable HTTP' } });
      const head = [
        'HTTP/1.1 400 Bad Request',
        'Content-Type: application/json; charset=utf-8',
        `Content-Length: ${Buffer.byteLength(body)}`,
        `X-Request-Id: ${newRequestId()}`,
        'X-Content-Type-Options: nosniff',
        'Cache-Control: no-store',
        'Connection: close',
      ];
      if (socket.writable) socket.end(`${head.join('\r\n')}\r\n\r\n${body}`);
      else socket.destroy();
    },
  }).withTypeProvider<TypeBoxTypeProvider>();
  // Before any route: each says who may call it, or the app does not start.
  app.decorate('declaredRoutes', requireDeclaredAccess(app));
  installErrorHandler(app, services.views);
  echoRequestIds(app);
  // Before any other hook that may answer: from the signal on, each request is refused and counted.
  app.decorate('gracefulStop', installGracefulStop(app));
  installFramingChecks(app);
  // Every body is JSON (the webhooks' raw body has a parser of its own): Fastify's default
  // text/plain parser would hand a string to validation, answered 400 rather than 415.
  app.removeContentTypeParser('text/plain');
  const https = options.secureCookies ?? isHttps(services);
  // Helmet's headers on every answer (nosniff, no referrer, no framing, same-origin opener and
  // resources, HSTS over https); the content security policy is ours, chosen by URL below.
  await app.register(fastifyHelmet, {
    contentSecurityPolicy: false,
    xFrameOptions: { action: 'deny' },
    referrerPolicy: { policy: 'no-referrer' },
    strictTransportSecurity: https ? { maxAge: limits.hstsMaxAgeS, includeSubDomains: false } : false,
  });
  // Before any hook that may refuse a request: the websocket plugin's own hooks mark an upgrade
  // request and close its connection once answered, and a refusal ahead of the marking (a Host not
  // served, an agent shed) left that connection open for good, and a graceful stop waiting on it.
  await app.register(fastifyWebsocket, { options: { maxPayload: 4096 } });
  // Agents beyond what the server can take are shed before any other work (only Helmet's headers).
  const overload = installOverloadShedding(app, {
    ...(options.refundsInFlightMax === undefined ? {} : { refundsInFlightMax: options.refundsInFlightMax }),
    ...(options.refundsWorkingMax === undefined ? {} : { refundsWorkingMax: options.refundsWorkingMax }),
    agentOf: (authorization) => agentOfAuthorization(services.config.agents, authorization)?.name ?? null,
    onShed: () => services.loopPressure.noteShed(),
  });
  // Only the names the server is reached by are answered (DNS rebinding); a route configured with
  // `anyHost` (liveness) answers any, so a balancer may probe it by address.
  const served = servedHosts({
    allowedHosts: services.config.network.allowedHosts,
    publicUrl: services.config.notifications.publicUrl,
    listenHost: options.listenHost ?? null,
  });
  app.addHook('onRequest', async (request) => {
    if (request.routeOptions.config.anyHost === true || isServedHost(request.hostname, served)) return;
    throw new AppError('host_not_allowed', 'this server does not answer for that host name; use its public address');
  });
  app.addHook('onSend', async (request, reply, payload) => {
    // Chosen by URL, not content type: a 304 for a page has no content type, and the browser
    // applies this header to the cached page.
    const api = isApiPath(request.url);
    reply.header('content-security-policy', api ? "default-src 'none'; frame-ancestors 'none'" : PAGE_CSP);
    if (api) reply.header('cache-control', 'no-store');
    return payload;
  });
  await app.register(fastifyCookie);

  await openApi(app, { publicUrl: () => services.config.notifications.publicUrl });
  installMetrics(app, services, overload);

  const operators = { tags: ['operators'], security: [] };
  app.get('/healthz', { config: { anyHost: true, access: { public: 'liveness: touches nothing' } }, schema: { ...operators, operationId: 'getHealth', summary: 'liveness: answers any Host, touches nothing; names the version that answers', response: { 200: Type.Object({ ok: Type.Literal(true), version: Type.String() }) } } }, async () => ({
    ok: true as const,
    version: INTERLOCK_VERSION,
  }));
  app.get(
    '/readyz',
    {
      config: { access: { public: 'readiness: says only whether start-up recovery has finished' } },
      schema: {
        ...operators,
        operationId: 'getReadiness',
        summary: 'ready once recovery after start has finished',
        response: responses({ 200: Type.Object({ ready: Type.Literal(true), sandbox: Type.Boolean() }), 503: NotReadySchema }, ['not_ready', 'journal_unavailable', 'internal_error']),
      },
    },
    async (_request, reply) => {
      // The derived tables rebuilt at start: how far, without waiting for the replay to end.
      const rebuild = services.views.rebuilding;
      if (rebuild !== null) return reply.code(503).send({ error: { code: 'not_ready' as const, message: REBUILDING_MESSAGE }, rebuild });
      // Caught up, so a journal that fails its check is never called ready.
      await services.views.current();
      if (!options.ready()) throw new AppError('not_ready', 'recovery after start is still running');
      return { ready: true as const, sandbox: services.sandbox };
    },
  );
  app.get(
    '/.well-known/interlock-keys',
    { config: { access: { public: 'public keys, for anyone to verify a receipt offline' } }, schema: { ...operators, operationId: 'listPublicKeys', summary: 'the public keys receipts are signed with', response: { 200: PublicKeySetSchema } } },
    async () => publicKeySet([services.signingKey]),
  );

  // Every route that shows or changes what the journal holds is registered inside a journal scope
  // (requireJournal): the views catch up before its handler runs, so a journal that fails a check
  // answers 503 journal_unavailable there, and a route added to one cannot forget it.
  // One way in for agents, over the HTTP API and over MCP alike: one token check, one pair of rates.
  const guard = agentGuard(services);
  await app.register(async (scope) => {
    requireJournal(scope, services.views, options.startGate);
    await scope.register(agentRoutes, { services, guard });
    await scope.register(mcpRoute, { services, guard, overload });
    await scope.register(checkpointRoute, { services });
  });
  // Logging in is how a session starts: outside the session's scope, and no URL is exempted in it.
  await app.register(loginRoute, { services, sessions, secureCookies: https });
  await app.register(async (scope) => {
    installSessionAuth(scope, services, sessions);
    // Who am I, logging out and the directory show nothing of the journal: they answer whatever it holds.
    await scope.register(sessionRoutes, { services, sessions, secureCookies: https });
    await scope.register(async (journalScope) => {
      requireJournal(journalScope, services.views, options.startGate);
      await journalScope.register(approverRoutes, { services });
      await journalScope.register(liveRoute, { services, sessions });
      await journalScope.register(scoreboardRoutes, { services });
      await journalScope.register(ledgerRoutes, { services });
      await journalScope.register(reconciliationRoutes, { services });
      if (services.config.testMode) await journalScope.register(testRoutes, { services });
    });
  });
  await app.register(async (scope) => {
    // Nothing is written to a journal that failed a check: Stripe is told 503 and delivers again later.
    requireJournal(scope, services.views, options.startGate);
    declarePublic(scope, "Stripe's webhooks: each delivery's signature is checked by the plugin");
    await scope.register(webhookRoutes, {
      journal: services.journal,
      secrets: options.webhookSecrets,
      livemode: services.config.stripe.mode === 'live',
      nowMs: () => services.clock.wallMs(),
      onConfirmed: () => services.views.refresh(),
      onPaymentEvent: (paymentIntent) => services.onPaymentEvent(paymentIntent),
    });
  });

  // One not-found handler: the web inbox's pages fall back to index.html; everything else is a 404.
  // The pages' files are the same for everyone: what they show comes from the routes above.
  const webDist = options.webDist ?? WEB_DIST;
  const hasWeb = existsSync(join(webDist, 'index.html'));
  await app.register(async (pages) => {
    declarePublic(pages, "the web inbox's files: the same for everyone, showing only what the routes above answer");
    if (hasWeb) await pages.register(fastifyStatic, { root: webDist, prefix: '/', wildcard: false });
    pages.setNotFoundHandler((request, reply) => {
      const path = request.url.split('?')[0] ?? '';
      if (!hasWeb || request.method !== 'GET' || isApiPath(path)) {
        throw new AppError('not_found', `no route ${request.method} ${path}`);
      }
      return reply.type('text/html').sendFile('index.html');
    });
  });
  return app;
}
