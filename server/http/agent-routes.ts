import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AgentAnswer, AgentCall } from '../agents/answer.ts';
import { askRefund } from '../agents/ask-refund.ts';
import { readReceipt, readRefund, verifyWithOwnKey } from '../agents/read-refund.ts';
import type { Services } from '../app/services.ts';
import { declarePublic } from './access-guard.ts';
import { type AgentGuard, agentOf } from './agent-guard.ts';
import { whileWorking } from './overload.ts';
import {
  ConflictingPayloadSchema,
  EffectParams,
  ReceiptSchema,
  RefundAnswerSchema,
  RefundRequestBodySchema,
  RequestParams,
  responses,
  VerifyReportSchema,
} from '../../shared/schemas.ts';

export { agentOfAuthorization } from './agent-guard.ts';

/** Who asks, as the use cases take it: the guarded agent, the request's id and its log. */
export function agentCallOf(request: FastifyRequest): AgentCall {
  return { agent: agentOf(request), callId: request.id, log: request.log };
}

/** A use case's answer, sent as it is: its status, its headers, its body. */
export function sendAnswer<Body>(reply: FastifyReply, answer: AgentAnswer<Body>): FastifyReply {
  return reply.status(answer.status).headers(answer.headers).send(answer.body);
}

/** What the agents' routes are given: the services, and the way in they share with MCP. */
export interface AgentRouteOptions {
  services: Services;
  guard: AgentGuard;
}

/**
 * The agents' API (docs/agents/http-api.md): each route parses, calls one use case
 * (server/agents/*), and answers. Authentication and the agents' rates are a hook of this scope
 * only; it is registered inside the journal's scope (journal-scope.ts), and every chain it answers
 * from is read through the views. A retry is always safe: the same request id answers the current
 * status and changes nothing.
 */
export async function agentRoutes(scope: FastifyInstance, opts: AgentRouteOptions): Promise<void> {
  const app = scope.withTypeProvider<TypeBoxTypeProvider>();
  const { services, guard } = opts;
  // No person is asked about: every route here is an agent's, behind the token checked below.
  declarePublic(app, "an agent's route: its bearer token is checked by the agents' scope");
  app.addHook('onRequest', async (request) => guard(request));

  const agents = { tags: ['agents'], security: [{ agentToken: [] }] };
  const refundSchema = {
    ...agents,
    operationId: 'createRefund',
    summary: 'ask for a refund',
    description:
      'The same request_id with the same payload answers the current status and writes nothing; with another payload it is 409 conflicting_payload, and nothing is written or sent. ' +
      "A currency that is not the payment's is 422 currency_mismatch, and nothing is written or sent; currency is no part of the payload.",
    body: RefundRequestBodySchema,
    response: responses({ 200: RefundAnswerSchema, 202: RefundAnswerSchema, 409: ConflictingPayloadSchema }, [
      'validation_failed',
      'unauthorized',
      'currency_mismatch',
      'payload_too_large',
      'unsupported_media_type',
      'rate_limited',
      'internal_error',
      'stripe_unavailable',
      'journal_unavailable',
    ]),
  };
  // Beyond the refund requests in flight, an agent was told 429 before any of this (overload.ts);
  // its place is held while the work goes on, even if the agent hangs up.
  app.post('/v1/refunds', { schema: refundSchema }, async (request, reply) =>
    whileWorking(request, async () => sendAnswer(reply, await askRefund(services, agentCallOf(request), request.body))),
  );

  const readErrors = ['unauthorized', 'not_found', 'rate_limited', 'internal_error', 'journal_unavailable'] as const;
  const statusSchema = {
    ...agents,
    operationId: 'getRefund',
    summary: "a refund request's current status",
    description: '202 while QUEUED, APPROVED or IN_FLIGHT, 200 once final: the same shape as the answer to POST.',
    params: RequestParams,
    response: responses({ 200: RefundAnswerSchema, 202: RefundAnswerSchema }, ['validation_failed', ...readErrors]),
  };
  app.get('/v1/refunds/:request_id', { schema: statusSchema }, async (request, reply) =>
    sendAnswer(reply, await readRefund(services, agentOf(request), request.params.request_id)),
  );

  // A path that cannot be read (a malformed %-escape) is 400 before the route; a well-read effect id that is not one is 404.
  const receiptErrors = ['validation_failed', ...readErrors] as const;
  const receiptSchema = { ...agents, params: EffectParams, response: responses({ 200: ReceiptSchema }, receiptErrors) };
  app.get('/v1/receipts/:effect_id', { schema: { ...receiptSchema, operationId: 'getReceipt', summary: "the signed receipt of one of the agent's requests" } }, async (request) =>
    readReceipt(services, agentOf(request), request.params.effect_id),
  );
  const verifySchema = { ...receiptSchema, operationId: 'verifyReceipt', summary: 'the verification report of that receipt', response: responses({ 200: VerifyReportSchema }, receiptErrors) };
  app.get('/v1/receipts/:effect_id/verify', { schema: verifySchema }, async (request) =>
    verifyWithOwnKey(services, await readReceipt(services, agentOf(request), request.params.effect_id)),
  );
}
