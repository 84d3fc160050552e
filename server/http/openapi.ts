import fastifySwagger from '@fastify/swagger';
import fastifySwaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { ERROR_CODES, type ErrorCode } from '../../shared/api.ts';
import { errorBody } from '../../shared/schemas.ts';
import { declarePublic } from './access-guard.ts';
import { DOCS_THEME_CSS } from './docs-theme.ts';
import { withComponentRefs, withComponentTitles } from './openapi-components.ts';
import { serversOf, withErrorComponent, withPortablePatterns, withRefundCallback, withRetryAfter } from './openapi-publish.ts';

/** Where the document and its page are served. */
export const OPENAPI_PATH = '/openapi.json';
export const DOCS_PATH = '/docs';
/** The approvers' websocket, served by live-route.ts. */
export const LIVE_PATH = '/api/live';
/** The contract's version: agents' routes live under /v1, and change only by adding. */
const CONTRACT_VERSION = '1.0.0';

/**
 * OpenAPI 3.1, generated from the route schemas the server validates with: registered before the
 * routes, so it sees every one. `GET /openapi.json` serves the document, `/docs` a page over it.
 */
export async function openApi(app: FastifyInstance, options: OpenApiOptions): Promise<void> {
  await app.register(fastifySwagger, {
    // Each route's schema as the document sees it: its shared shapes named (openapi-components.ts).
    transform: ({ schema, url }) => ({ schema: withComponentTitles(schema), url }),
    // The generator sees only the routes with a schema: the websocket and the page over this
    // document are added here, so the document lists every route.
    transformObject: (document) => ('openapiObject' in document ? published(document.openapiObject, options) : document.swaggerObject),
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Interlock',
        version: CONTRACT_VERSION,
        description:
          'Agents ask for Stripe refunds; Interlock sends each at most once, under live authority, on facts that still hold, ' +
          'or puts it in front of a person. Every error answer is `{"error":{"code","message"}}` with a stable code. ' +
          'Sending the same request again is always safe: the same request_id is the same decision forever.',
      },
      components: {
        securitySchemes: {
          agentToken: { type: 'http', scheme: 'bearer', description: "an agent's token from interlock.yaml" },
          session: { type: 'apiKey', in: 'cookie', name: 'interlock_session', description: 'a person logged in with POST /api/session; changes also need x-csrf-token' },
          stripeSignature: { type: 'apiKey', in: 'header', name: 'Stripe-Signature', description: "Stripe's webhook signature" },
          checkpointToken: {
            type: 'http',
            scheme: 'bearer',
            description: "the checkpoint token of the config's integrity section; an agent's token opens the checkpoint too, and none is needed when integrity.checkpoint_public is set",
          },
          metricsToken: { type: 'http', scheme: 'bearer', description: "the metrics token of the config's metrics section; a scraper from an address of metrics.allow_from needs none" },
        },
      },
      tags: [
        { name: 'agents', description: 'ask for refunds, read their status and receipts' },
        { name: 'approvers', description: 'the API behind the React inbox' },
        { name: 'finance', description: 'the scoreboard' },
        { name: 'stripe', description: 'signed webhooks from Stripe' },
        { name: 'operators', description: 'health, readiness, keys and this document' },
      ],
    },
  });
  // BaseLayout drops Swagger UI's top bar (a URL field without a label, a logo without alt text);
  // no deep links, whose anchors sat inside each operation's toggle button; examples as plain
  // text, since the highlighter's colours fail contrast. docs-theme.ts mends the colours. No list
  // of the named shapes at the end (each operation shows its own, expanded): its expand buttons
  // fail contrast, and a generator reads them from the document, not from this page.
  await app.register(async (docs) => {
    declarePublic(docs, 'the API reference page: the same for everyone');
    await docs.register(fastifySwaggerUi, {
      routePrefix: DOCS_PATH,
      staticCSP: false,
      theme: { title: 'Interlock API reference', css: [{ filename: 'interlock-docs.css', content: DOCS_THEME_CSS }] },
      uiConfig: { docExpansion: 'list', deepLinking: false, layout: 'BaseLayout', syntaxHighlight: false, defaultModelsExpandDepth: -1 },
    });
  });
  const documentSchema = {
    tags: ['operators'],
    operationId: 'getOpenApiDocument',
    security: [],
    summary: 'this document: every route, its parameters, bodies and answers, as OpenAPI 3.1',
    response: { 200: Type.Object({ openapi: Type.Literal('3.1.0') }, { additionalProperties: true, description: 'the OpenAPI document' }) },
  };
  app.get(OPENAPI_PATH, { schema: documentSchema, config: { access: { public: 'the API document: the same for everyone' } } }, async () => app.swagger());
}

/** What the published document depends on besides the routes. */
export interface OpenApiOptions {
  /** The config's public_url as it is when the document is first asked for, or null. */
  publicUrl: () => string | null;
}

/** The generated document as it is published: every route, shared shapes named once, what a client generator needs. */
function published<T extends { paths?: Record<string, unknown>; components?: object }>(document: T, options: OpenApiOptions): T {
  const complete = withHostRefusal(withUnseenRoutes(document));
  const extended = withRefundCallback(withRetryAfter(withErrorComponent(withComponentRefs(complete))), 'createRefund');
  return { ...withPortablePatterns(extended), servers: serversOf(options.publicUrl()) };
}

/** The answers of a route the generator cannot see, each error status with the codes it carries. */
function answersOf(answers: Record<number, { description: string; content?: Record<string, { schema: unknown }> }>, codes: readonly ErrorCode[]) {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of codes) byStatus.set(ERROR_CODES[code], [...(byStatus.get(ERROR_CODES[code]) ?? []), code]);
  const errors = [...byStatus].map(([status, list]) => [status, { description: list.join(', '), content: { 'application/json': { schema: errorBody(list) } } }]);
  return { ...answers, ...Object.fromEntries(errors) };
}

/**
 * What the generator cannot see: the approvers' live feed, described as the GET that upgrades to
 * a websocket, and the page over this document.
 */
function withUnseenRoutes<T extends { paths?: Record<string, unknown> }>(document: T): T {
  const live = {
    get: {
      tags: ['approvers'],
      operationId: 'openLiveFeed',
      security: [{ session: [] }],
      summary: 'websocket: my inbox now, then every change to items of my groups',
      description:
        'Upgrade with the session cookie. Messages: {type:"snapshot",items,now_ms}, {type:"item",effect_id,item,now_ms}, ' +
        '{type:"scoreboard",now_ms}, {type:"clock",now_ms}, {type:"facts",effect_id,current,now_ms}, {type:"presence",effect_id,viewers,now_ms}, ' +
        '{type:"session",warning,ends_in_ms,renewable,now_ms} (the session ends soon, or no longer). Without a session the upgrade is refused with 401; a GET that does not ' +
        'ask to upgrade, or a handshake without a valid Sec-WebSocket-Key or with a Sec-WebSocket-Version other than 13, is 400. Closed with 4401 when the session ends (reason session_expired at its idle or absolute limit), 1011 when the journal failed a check.',
      responses: answersOf({ 101: { description: 'switching to the websocket protocol' } }, [
        'validation_failed',
        'unauthorized',
        'session_expired',
        'internal_error',
        'journal_unavailable',
      ]),
    },
  };
  const docs = {
    get: {
      tags: ['operators'],
      operationId: 'getDocsPage',
      security: [],
      summary: 'a page to read this document and try its routes',
      responses: answersOf({ 200: { description: 'the page', content: { 'text/html': { schema: { type: 'string' } } } } }, []),
    },
  };
  return { ...document, paths: { ...document.paths, [LIVE_PATH]: live, [DOCS_PATH]: docs } };
}

/** Routes answering whatever Host a request names (their route config says `anyHost`). */
const ANY_HOST_PATHS = new Set(['/healthz']);

/**
 * Every route but liveness refuses a Host the server does not answer for (app.ts, before any
 * route runs): added here once rather than to each route's schema.
 */
function withHostRefusal<T extends { paths?: Record<string, unknown> }>(document: T): T {
  const refusal = answersOf({}, ['host_not_allowed']);
  const paths = Object.fromEntries(
    Object.entries(document.paths ?? {}).map(([path, operations]) => {
      if (ANY_HOST_PATHS.has(path) || !isRecord(operations)) return [path, operations];
      const withRefusal = Object.entries(operations).map(([method, operation]) => [
        method,
        isRecord(operation) ? { ...operation, responses: { ...(isRecord(operation.responses) ? operation.responses : {}), ...refusal } } : operation,
      ]);
      return [path, Object.fromEntries(withRefusal)];
    }),
  );
  return { ...document, paths };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
