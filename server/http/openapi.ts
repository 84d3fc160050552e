import fastifySwagger from '@fastify/swagger';
import fastifySwaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import { errorBody } from '../../shared/schemas.ts';

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
export async function openApi(app: FastifyInstance): Promise<void> {
  await app.register(fastifySwagger, {
    // A websocket route is not an HTTP operation, so the generator leaves it out; it is added here
    // as the GET that upgrades, so the document still lists every route.
    transformObject: (document) => ('openapiObject' in document ? withLiveFeed(document.openapiObject) : document.swaggerObject),
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
  await app.register(fastifySwaggerUi, { routePrefix: DOCS_PATH, staticCSP: false, uiConfig: { docExpansion: 'list', deepLinking: true } });
  app.get(OPENAPI_PATH, { schema: { hide: true } }, async () => app.swagger());
}

/** The approvers' live feed, described as the GET that upgrades to a websocket. */
function withLiveFeed<T extends { paths?: Record<string, unknown> }>(document: T): T {
  const live = {
    get: {
      tags: ['approvers'],
      security: [{ session: [] }],
      summary: 'websocket: my inbox now, then every change to items of my groups',
      description:
        'Upgrade with the session cookie. Messages: {type:"snapshot",items,now_ms}, {type:"item",effect_id,item,now_ms}, ' +
        '{type:"scoreboard",now_ms}, {type:"clock",now_ms}. Closed with 4401 when not logged in as an approver, 1011 when the journal failed a check.',
      responses: {
        101: { description: 'switching to the websocket protocol' },
        503: {
          description: 'journal_unavailable',
          content: { 'application/json': { schema: errorBody(['journal_unavailable']) } },
        },
      },
    },
  };
  return { ...document, paths: { ...document.paths, [LIVE_PATH]: live } };
}
