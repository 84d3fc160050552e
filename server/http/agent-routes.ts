import type { Entry } from '../../shared/entries.ts';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import Stripe from 'stripe';
import { ERROR_CODES, type RefundRequest, type RefundRequestBody, requestPayload } from '../../shared/api.ts';
import { isJsonObject, type JsonObject } from '../../shared/json.ts';
import { limits } from '../../shared/limits.ts';
import type { Status } from '../../shared/statuses.ts';
import { tokenMatches } from '../config/secrets.ts';
import type { AgentConfig } from '../config/schema.ts';
import { signReceipt } from '../receipts/receipts.ts';
import { type FreshFacts, InvalidEffectError } from '../gate/target.ts';
import { verifyReceipt } from '../receipts/verify.ts';
import { displayNameOf, livenessOf, requestKeyOf, type Services } from '../app/services.ts';
import { isJournalFailure } from '../views/failures.ts';
import { boundRequest, waitsItsTurn } from '../inbox/state.ts';
import { withStripeClass } from '../stripe/paced-client.ts';
import { addressKeyOf } from '../throttle/client-address.ts';
import { RateLimiter } from '../throttle/rate-limiter.ts';
import {
  answerHttpStatus,
  boundBeforeReasonsKept,
  conflictingPayload,
  currencyMismatch,
  paymentCurrencyOf,
  refundAnswer,
  refundHttpStatus,
} from '../refunds/answers.ts';
import { declarePublic } from './access-guard.ts';
import { AppError } from './errors.ts';
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

/** True for facts read with the journal position before them (`FreshFacts`), rather than facts alone. */
function isFresh(read: FreshFacts | JsonObject): read is FreshFacts {
  return typeof read.key === 'string' && typeof read.seq === 'number' && typeof read.readAtWallMs === 'number' && isJsonObject(read.facts);
}

declare module 'fastify' {
  interface FastifyRequest {
    agent?: AgentConfig;
  }
}

/** The agent an Authorization header's bearer token belongs to, if any; every configured token is compared in constant time. */
export function agentOfAuthorization(agents: readonly AgentConfig[], authorization: string | undefined): AgentConfig | undefined {
  const token = /^Bearer ([A-Za-z0-9._~+/=-]{8,512})$/.exec(authorization ?? '')?.[1];
  return token ? agents.find((a) => tokenMatches(token, a.tokenSha256)) : undefined;
}

/** Find the agent a bearer token belongs to, or refuse the request. */
function authenticate(services: Services, request: FastifyRequest): AgentConfig {
  const agent = agentOfAuthorization(services.config.agents, request.headers.authorization);
  if (!agent) throw new AppError('unauthorized', 'send Authorization: Bearer <agent token>');
  return agent;
}

/** A request over its rate (throttle.agent_token, throttle.agent_address): 429 with the wait, nothing written. */
function refuseOverRate(reply: FastifyReply, waitMs: number | null, who: string): void {
  if (waitMs === null) return;
  const waitS = Math.max(1, Math.ceil(waitMs / 1000));
  reply.header('retry-after', String(waitS));
  throw new AppError('rate_limited', `${who} sent requests faster than its rate allows; nothing was written, send this one again in ${waitS} s`);
}

/** A Stripe read that failed before anything was written: say so plainly. */
function stripeFailure(error: unknown): AppError | null {
  if (!(error instanceof Stripe.errors.StripeError)) return null;
  // A missing payment intent is 404 when it is read by id and 400 resource_missing when it filters
  // the list of its refunds: the facts read both at once, and either may answer first.
  if (error.statusCode === 404 || error.code === 'resource_missing') {
    return new AppError('validation_failed', 'payment_intent: Stripe knows no such payment intent');
  }
  if (error.statusCode !== undefined && error.statusCode < 500 && error.statusCode !== 429) {
    return new AppError('validation_failed', `Stripe refused to read the payment: ${error.message}`);
  }
  return new AppError('stripe_unavailable', 'Stripe could not be reached; nothing was sent, try again');
}

/**
 * The agents' API (docs/agents/http-api.md). Authentication is a hook of this scope only; it is registered inside
 * the journal's scope (journal-scope.ts), and every chain it answers from is read through the
 * views. A retry is always safe: the same request id answers the current status and changes nothing.
 */
export async function agentRoutes(scope: FastifyInstance, opts: { services: Services }): Promise<void> {
  const app = scope.withTypeProvider<TypeBoxTypeProvider>();
  const { services } = opts;
  const wallMs = () => services.clock.wallMs();
  // Each server on the storage enforces its share of the configured rates, by the servers alive
  // (the alive leases, server/app/work-leases.ts): together they allow the rate, not one per server.
  const servers = () => services.workLeases.liveServers();
  const byAddress = new RateLimiter(services.config.throttle.agentAddress, wallMs, servers);
  const byToken = new RateLimiter(services.config.throttle.agentToken, wallMs, servers);
  // No person is asked about: every route here is an agent's, behind the token checked below.
  declarePublic(app, "an agent's route: its bearer token is checked by the agents' scope");
  app.addHook('onRequest', async (request, reply) => {
    // The address first, so guessing tokens is paced as well; then the agent the token names.
    refuseOverRate(reply, byAddress.take(addressKeyOf(request.ip)), 'this address');
    const agent = authenticate(services, request);
    refuseOverRate(reply, byToken.take(agent.name), `agent ${agent.name}`);
    request.agent = agent;
  });

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
  app.post('/v1/refunds', { schema: refundSchema }, async (request, reply) => whileWorking(request, () => answerRefund(request, reply, request.body)));

  /** The request's chain as the views verified it, caught up with everything durable now. */
  const chainOf = async (effectId: string) => (await services.views.current()).chain(effectId);

  async function answerRefund(request: FastifyRequest, reply: FastifyReply, body: RefundRequestBody) {
    const agent = request.agent!;
    const offered = requestPayload(body);
    const bound: RefundRequest = { id: body.request_id, agent: agent.name, ...offered };
    const effectId = services.inbox.effectIdOf(bound);
    const conflictWith = (chain: readonly Entry[]) => {
      const recorded = boundRequest(chain);
      return recorded ? conflictingPayload(body.request_id, recorded, offered, boundBeforeReasonsKept(chain)) : null;
    };
    // The same request id is the same decision forever: another payload under it is refused
    // before the inbox is asked anything, so nothing is written or sent, whatever state it is in.
    const before = await chainOf(effectId);
    const conflict = conflictWith(before);
    if (conflict) return reply.status(ERROR_CODES.conflicting_payload).send(conflict);
    const waiting = before.length === 0 ? null : waitsItsTurn(before);
    let status: Status | null = null;
    if (before.length === 0 || waiting) {
      // A new request: its read and its create, taken together now, or it waits its turn.
      const grant = waiting ? null : await services.turns.admit();
      if (grant === null) {
        // A request that names its currency is checked against the payment before anything is
        // written, so it cannot wait its turn in the journal: it is asked to come again.
        if (body.currency !== undefined && before.length === 0) {
          reply.header('retry-after', String(Math.max(1, Math.ceil(services.turns.expectedWaitMs() / 1000))));
          throw new AppError('rate_limited', 'Stripe’s rate budget has no room to check the payment’s currency now; nothing was written, send this request again later');
        }
        return waitTurn(request, reply, effectId, bound, before, conflictWith);
      }
      const decide = async () => {
        const read = await checkCurrency(body, before, bound);
        return read === undefined || !isFresh(read) ? services.inbox.submit(bound, read, undefined, request.id) : services.inbox.submit(bound, undefined, read, request.id);
      };
      status = await submitWithin(request, effectId, () => withStripeClass('request', decide, grant), () => grant.release());
    } else {
      // The same payload again: the inbox is given the request exactly as it was bound.
      await checkCurrency(body, before, bound);
      status = await submitWithin(request, effectId, () => services.inbox.submit(boundRequest(before) ?? bound, undefined, undefined, request.id));
    }
    // The answer is the chain's own, read as the views verified it; catching up with it also
    // tells the live pages now rather than at the next poll.
    const chain = await chainOf(effectId);
    // Two first requests under one id with other payloads raced: the one bound first won, and
    // the inbox and the gate wrote nothing for this one (they check the binding as they write).
    const lost = conflictWith(chain);
    if (lost) return reply.status(ERROR_CODES.conflicting_payload).send(lost);
    const answer = refundAnswer(body.request_id, effectId, chain, status ?? undefined, (name) => displayNameOf(services.config, name), livenessOf(services));
    return reply.status(answerHttpStatus(answer, chain)).send(answer);
  }

  /**
   * Submit, and answer within `limits.refundAnswerWithinMs` whatever happens: a send still going on
   * then (Stripe busy, its 429 retried under the same key) finishes on its own and the agent is
   * answered from the chain (IN_FLIGHT, 202). A failure before anything was written is the
   * agent's to hear; after it, the journal says what stands.
   */
  async function submitWithin(request: FastifyRequest, effectId: string, submit: () => Promise<Status>, done: () => void = () => {}): Promise<Status | null> {
    const running = (async () => {
      try {
        return await submit();
      } finally {
        done();
      }
    })();
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<null>((resolve) => {
      timer = setTimeout(() => resolve(null), limits.refundAnswerWithinMs);
    });
    try {
      return await Promise.race([running, late]);
    } catch (error) {
      if (error instanceof InvalidEffectError) throw new AppError('validation_failed', error.message);
      if (isJournalFailure(error)) throw error;
      const chain = await chainOf(effectId);
      if (chain.length === 0) throw stripeFailure(error) ?? error;
      // Something was written before the failure (an unknown send outcome): the journal says what stands.
      request.log.warn({ err: error, effectId }, 'refund submit ended in an unknown outcome; recovery settles it');
      return null;
    } finally {
      clearTimeout(timer);
      running.catch((error: unknown) => request.log.warn({ err: error, effectId }, 'a refund send went on after its answer and failed; recovery settles it'));
    }
  }

  /**
   * The Stripe budget has no room for this request now: it is journaled bound to its payload with
   * no facts yet, queued in arrival order, and answered 202 with the expected wait. Beyond what the
   * budget sends in ten minutes, it is answered 429 with nothing written.
   */
  async function waitTurn(
    request: FastifyRequest,
    reply: FastifyReply,
    effectId: string,
    bound: RefundRequest,
    before: readonly Entry[],
    conflictWith: (chain: readonly Entry[]) => ReturnType<typeof conflictingPayload> | null,
  ) {
    const retryAfterS = String(Math.max(1, Math.ceil(services.turns.expectedWaitMs(before.length === 0 ? undefined : effectId) / 1000)));
    if (before.length === 0) {
      if (services.turns.full) {
        reply.header('retry-after', retryAfterS);
        throw new AppError('rate_limited', `${services.turns.length} refund requests already wait their turn for Stripe; nothing was written, send this one again later`);
      }
      if (!(await services.turns.accept(effectId, bound, request.id))) {
        // Another request under this id bound it first: a conflict, or the same request's status.
        const chain = await chainOf(effectId);
        const lost = conflictWith(chain);
        if (lost) return reply.status(ERROR_CODES.conflicting_payload).send(lost);
      }
    }
    services.turns.enqueue(effectId);
    const chain = await chainOf(effectId);
    const answer = refundAnswer(bound.id, effectId, chain, undefined, (name) => displayNameOf(services.config, name), livenessOf(services));
    if (waitsItsTurn(chain)) reply.header('retry-after', retryAfterS);
    return reply.status(answerHttpStatus(answer, chain)).send(answer);
  }

  /**
   * Refuse a request whose `currency` is not its payment's (422 currency_mismatch) before anything
   * is written or sent. The payment's currency is known only from the payment: from the facts its
   * request id was bound on, or, for a new request, read from Stripe now; those facts are returned
   * for the submit to decide on, so the payment is not read twice. Nothing for a request without one.
   */
  async function checkCurrency(body: RefundRequestBody, chain: readonly Entry[], request: RefundRequest): Promise<FreshFacts | JsonObject | undefined> {
    if (body.currency === undefined) return undefined;
    let currency = paymentCurrencyOf(chain);
    let facts: FreshFacts | JsonObject | undefined;
    if (currency === null) {
      try {
        facts = await services.inbox.readFresh(request);
      } catch (error) {
        throw stripeFailure(error) ?? error;
      }
      const read = isFresh(facts) ? facts.facts : facts;
      currency = typeof read.currency === 'string' ? read.currency : null;
    }
    const mismatch = currencyMismatch(body, currency);
    if (mismatch !== null) throw new AppError('currency_mismatch', mismatch);
    return chain.length === 0 ? facts : undefined;
  }

  const readErrors = ['unauthorized', 'not_found', 'rate_limited', 'internal_error', 'journal_unavailable'] as const;
  const statusSchema = {
    ...agents,
    operationId: 'getRefund',
    summary: "a refund request's current status",
    description: '202 while QUEUED, APPROVED or IN_FLIGHT, 200 once final: the same shape as the answer to POST.',
    params: RequestParams,
    response: responses({ 200: RefundAnswerSchema, 202: RefundAnswerSchema }, ['validation_failed', ...readErrors]),
  };
  app.get('/v1/refunds/:request_id', { schema: statusSchema }, async (request, reply) => {
    const requestId = request.params.request_id;
    const effectId = services.gate.effectIdOf({ requestKey: requestKeyOf({ id: requestId, agent: request.agent!.name }), effect: {} });
    const chain = await chainOf(effectId);
    if (chain.length === 0) throw new AppError('not_found', `no refund request ${requestId}`);
    const answer = refundAnswer(requestId, effectId, chain, undefined, (name) => displayNameOf(services.config, name), livenessOf(services));
    // Still waiting its turn for Stripe: when to ask again, from its place in the queue.
    if (waitsItsTurn(chain)) reply.header('retry-after', String(Math.max(1, Math.ceil(services.turns.expectedWaitMs(effectId) / 1000))));
    return reply.status(refundHttpStatus(answer.status)).send(answer);
  });

  /** Receipts of the asking agent's own requests only. */
  async function ownReceipt(request: FastifyRequest<{ Params: { effect_id: string } }>) {
    const effectId = request.params.effect_id;
    // Signed over the entries the views verified, never over whatever rows the table holds now.
    const chain = await chainOf(effectId);
    const owner = boundRequest(chain);
    if (!owner || owner.agent !== request.agent!.name) throw new AppError('not_found', 'no such receipt');
    return signReceipt(effectId, chain, services.signingKey);
  }

  // A path that cannot be read (a malformed %-escape) is 400 before the route; a well-read effect id that is not one is 404.
  const receiptErrors = ['validation_failed', ...readErrors] as const;
  const receiptSchema = { ...agents, params: EffectParams, response: responses({ 200: ReceiptSchema }, receiptErrors) };
  app.get('/v1/receipts/:effect_id', { schema: { ...receiptSchema, operationId: 'getReceipt', summary: "the signed receipt of one of the agent's requests" } }, ownReceipt);
  const verifySchema = { ...receiptSchema, operationId: 'verifyReceipt', summary: 'the verification report of that receipt', response: responses({ 200: VerifyReportSchema }, receiptErrors) };
  app.get('/v1/receipts/:effect_id/verify', { schema: verifySchema }, async (request) => {
    const receipt = await ownReceipt(request);
    return verifyReceipt(receipt, new Map([[services.signingKey.keyId, services.signingKey.publicKeyPem]]));
  });
}
