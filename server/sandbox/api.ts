import type { IncomingMessage, ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import Stripe from 'stripe';
import { decideCustomer, readCustomerRequest } from './customers.ts';
import type { SandboxEngine } from './engine.ts';
import {
  apiError,
  errorJson,
  idempotencyKeyInUse,
  idempotencyMismatch,
  invalidRequest,
  lockTimeout,
  maskKey,
  missingInParam,
  rateLimited,
  resourceMissing,
  tooManyKeys,
  unauthorized,
  unrecognizedUrl,
} from './errors.ts';
import type { RequestOutcome } from './counts.ts';
import { canonicalParams, type FormObject, parseForm } from './form.ts';
import { headerOf, matchPath, readBody, sendJsonText } from './http.ts';
import { newId } from './ids.ts';
import { sandboxLimits } from './limits.ts';
import { type OperationName, operationOf, UNRECOGNIZED_OPERATION } from './operations.ts';
import type { Read } from './params.ts';
import { decideConfirm, decidePaymentIntent, readConfirmRequest, readPaymentIntentRequest } from './payments.ts';
import { serveGet } from './reads.ts';
import { decideRefund, readRefundRequest } from './refunds.ts';
import { renderPaymentIntent, renderRefund, stringifyInMode } from './render.ts';
import { permissionRefusal } from './permissions.ts';
import type { KeyMode } from './settings.ts';
import { renderCustomer } from './render-cards.ts';
import type { FaultTarget, PaymentIntentRecord, SandboxRecord, StripeFailure } from './types.ts';
import type { EventCause } from './webhooks.ts';

/** What a POST endpoint decided: objects to commit, the answer, and what follows the answer. */
interface Plan {
  writes: SandboxRecord[];
  body: unknown;
  after?: () => void;
}

/** A POST endpoint as the idempotency layer sees it. */
interface PostEndpoint {
  /** `POST /v1/refunds`: a key belongs to one endpoint. */
  name: string;
  faultTarget: FaultTarget | null;
  /** Validate and decide; a refusal here is validation and is never saved for the key. */
  decide(params: FormObject, cause: EventCause): Read<Plan>;
}

/** One Stripe API request on its way through. */
interface Exchange {
  engine: SandboxEngine;
  inFlightKeys: Set<string>;
  req: IncomingMessage;
  res: ServerResponse;
  requestId: string;
  headers: Record<string, string>;
  /** What the request came to, for the counts; set by `fail`, `through` otherwise. */
  outcome: RequestOutcome;
}

/**
 * Serve one request to `/v1/...` the way Stripe would: the key, then the rate limiter (before
 * anything else runs, so a refused request does nothing and saves nothing), then the endpoint.
 * Every answer is counted under its operation.
 */
export async function handleStripeApi(
  engine: SandboxEngine,
  inFlightKeys: Set<string>,
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
): Promise<void> {
  const requestId = newId('req');
  const headers = { 'request-id': requestId, 'stripe-version': headerOf(req, 'stripe-version') ?? Stripe.API_VERSION };
  const ex: Exchange = { engine, inFlightKeys, req, res, requestId, headers, outcome: 'through' };
  const operation = operationOf(req.method ?? '', url.pathname);
  const arrivedMs = engine.nowMs();
  try {
    await serveApi(ex, url, operation);
  } finally {
    engine.counts.record(operation, ex.outcome, arrivedMs);
  }
}

async function serveApi(ex: Exchange, url: URL, operation: OperationName): Promise<void> {
  const { engine, req } = ex;
  const settings = engine.settings();
  const auth = readApiKey(headerOf(req, 'authorization'), settings.mode);
  if ('failure' in auth) return fail(ex, auth.failure);
  if (!engine.limiter.admit(operation, engine.nowMs())) return fail(ex, rateLimited());
  const forbidden = operation === UNRECOGNIZED_OPERATION ? null : permissionRefusal(auth.key, operation, settings.deniedPermissions);
  if (forbidden) return fail(ex, forbidden);
  if (req.method === 'GET') {
    const query = parseForm(url.search.slice(1));
    if (!query.ok) return fail(ex, query.failure);
    return answerRead(ex, serveGet(engine, url.pathname, query.params));
  }
  if (req.method === 'POST') {
    const body = await readBody(req, sandboxLimits.requestBodyBytesMax);
    if (body === null) {
      return fail(ex, {
        statusCode: 413,
        error: { type: 'invalid_request_error', message: 'The request body is too large.' },
      });
    }
    const form = parseForm(body);
    if (!form.ok) return fail(ex, form.failure);
    const endpoint = postEndpoint(engine, url.pathname);
    if (endpoint === null) return fail(ex, unrecognizedUrl('POST', url.pathname));
    return runPost(ex, endpoint, form.params);
  }
  return fail(ex, unrecognizedUrl(req.method ?? '?', url.pathname));
}

/**
 * Only keys of the mode the sandbox answers as open it: test-mode secret or restricted keys, or
 * in live mode live ones. The refusals are Stripe's 401s, in its words, with no code (Stripe sends
 * none for a missing or wrong key), the key masked but for its prefix and last four characters as
 * Stripe masks it. The key is answered for the permission check.
 */
function readApiKey(authorization: string | undefined, mode: KeyMode): { key: string } | { failure: StripeFailure } {
  const match = /^Bearer\s+(\S+)$/i.exec(authorization ?? '');
  if (!match) {
    return {
      failure: unauthorized(
        "You did not provide an API key. You need to provide your API key in the Authorization header, using Bearer auth (e.g. 'Authorization: Bearer YOUR_SECRET_KEY'). See https://stripe.com/docs/api#authentication for details, or we can help at https://support.stripe.com/.",
      ),
    };
  }
  const key = match[1]!;
  if (!key.startsWith(`sk_${mode}_`) && !key.startsWith(`rk_${mode}_`)) return { failure: unauthorized(`Invalid API Key provided: ${maskKey(key)}`) };
  return { key };
}

/**
 * The idempotency layer around a POST endpoint, in Stripe's order: rate limit; key checks
 * (replay, other parameters, in use); the endpoint's validation (not saved); then the endpoint
 * runs and its answer is committed together with its objects before anything is sent.
 */
async function runPost(ex: Exchange, endpoint: PostEndpoint, params: FormObject): Promise<void> {
  const { engine } = ex;
  const target = endpoint.faultTarget;
  if (target !== null && engine.faults.take(target, 'arrival') !== null) return fail(ex, rateLimited());
  const key = headerOf(ex.req, 'idempotency-key') || null;
  const fingerprint = canonicalParams(params);
  if (key !== null) {
    if (key.length > sandboxLimits.idempotencyKeyCharsMax) {
      return fail(
        ex,
        invalidRequest(
          null,
          `Idempotency-Key must be at most ${sandboxLimits.idempotencyKeyCharsMax} characters.`,
          'idempotency_key',
        ),
      );
    }
    ex.headers['idempotency-key'] = key;
    const saved = engine.store.savedAnswer(key, engine.nowMs());
    if (saved !== null) {
      if (saved.endpoint !== endpoint.name) {
        return fail(
          ex,
          idempotencyMismatch(
            key,
            `for the same endpoint they were first used for ('${saved.endpoint}' vs '${endpoint.name}')`,
          ),
        );
      }
      if (saved.fingerprint !== fingerprint) {
        return fail(ex, idempotencyMismatch(key, 'with the same parameters they were first used with'));
      }
      if (target !== null && engine.faults.take(target, 'replaying') !== null) return void ex.res.destroy();
      return sendJsonText(ex.res, saved.statusCode, saved.body, {
        ...ex.headers,
        'idempotent-replayed': 'true',
        'original-request': saved.requestId,
      });
    }
    if (ex.inFlightKeys.has(key)) return fail(ex, idempotencyKeyInUse(key));
    ex.inFlightKeys.add(key);
  }
  try {
    await execute(ex, endpoint, params, key, fingerprint);
  } finally {
    if (key !== null) ex.inFlightKeys.delete(key);
  }
}

async function execute(
  ex: Exchange,
  endpoint: PostEndpoint,
  params: FormObject,
  key: string | null,
  fingerprint: string,
): Promise<void> {
  const { engine } = ex;
  const target = endpoint.faultTarget;
  const delay = target === null ? null : engine.faults.take(target, 'started');
  if (delay !== null) await sleep(delay.delayMs ?? 0);
  if (!engine.isOpen()) return void ex.res.destroy();
  const plan = endpoint.decide(params, { requestId: ex.requestId, idempotencyKey: key });
  if (!plan.ok) return fail(ex, plan.failure);
  if (key !== null && !engine.store.makeRoomForKey(engine.nowMs())) {
    return fail(ex, tooManyKeys());
  }
  const fault = target === null ? null : engine.faults.take(target, 'executing');
  const answer =
    fault === null || fault.action === 'drop_after_commit'
      ? { statusCode: 200, text: stringifyInMode(plan.value.body, engine.settings().mode === 'live') }
      : { statusCode: 500, text: JSON.stringify(errorJson(apiError()), null, 2) };
  const writes = fault?.action === 'error_500' ? [] : plan.value.writes;
  const saved =
    key === null
      ? undefined
      : {
          key,
          endpoint: endpoint.name,
          fingerprint,
          statusCode: answer.statusCode,
          body: answer.text,
          requestId: ex.requestId,
          createdMs: engine.nowMs(),
        };
  engine.store.commit(writes, saved);
  if (fault?.action === 'drop_after_commit') ex.res.destroy();
  else sendJsonText(ex.res, answer.statusCode, answer.text, ex.headers);
  if (writes.length > 0) plan.value.after?.();
}

function postEndpoint(engine: SandboxEngine, path: string): PostEndpoint | null {
  if (path === '/v1/refunds') {
    return {
      name: 'POST /v1/refunds',
      faultTarget: 'refund_create',
      decide(params, cause) {
        const request = readRefundRequest(params);
        if (!request.ok) return request;
        // The write takes its payment's lock; a held lock (a fault) refuses it before it decides.
        const paymentIntent = request.value.paymentIntentId ?? engine.store.charges.get(request.value.chargeId ?? '')?.paymentIntentId ?? null;
        if (engine.faults.take('refund_create', 'locking', paymentIntent) !== null) return { ok: false, failure: lockTimeout() };
        const refund = decideRefund(engine.store, request.value, 'api', engine.nowMs(), engine.createdRefundStatus());
        if (!refund.ok) return refund;
        const after = () => engine.afterRefundCreated(refund.value, cause);
        return { ok: true, value: { writes: [refund.value], body: renderRefund(refund.value), after } };
      },
    };
  }
  if (path === '/v1/payment_intents') {
    return {
      name: 'POST /v1/payment_intents',
      faultTarget: null,
      decide(params) {
        const request = readPaymentIntentRequest(params);
        if (!request.ok) return request;
        const { customerId } = request.value;
        if (customerId !== null && !engine.store.customers.has(customerId)) {
          return { ok: false, failure: missingInParam('customer', customerId, 'customer') };
        }
        return paymentPlan(engine, decidePaymentIntent(request.value, engine.nowMs()));
      },
    };
  }
  if (path === '/v1/customers') {
    return {
      name: 'POST /v1/customers',
      faultTarget: null,
      decide(params) {
        const request = readCustomerRequest(params);
        if (!request.ok) return request;
        const customer = decideCustomer(request.value, engine.nowMs());
        return { ok: true, value: { writes: [customer], body: renderCustomer(customer) } };
      },
    };
  }
  const confirm = matchPath('/v1/payment_intents/:id/confirm', path);
  if (confirm !== null) {
    const id = confirm['id']!;
    return {
      name: `POST /v1/payment_intents/${id}/confirm`,
      faultTarget: null,
      decide(params) {
        const intent = engine.store.paymentIntents.get(id);
        if (intent === undefined) return { ok: false, failure: resourceMissing('payment_intent', id, 'intent') };
        const method = readConfirmRequest(params);
        if (!method.ok) return method;
        return paymentPlan(engine, decideConfirm(intent, method.value, engine.nowMs()));
      },
    };
  }
  return null;
}

/** A payment step's plan: answered with its payment intent; a dispute it opened is told by webhook once durable. */
function paymentPlan(engine: SandboxEngine, writes: Read<SandboxRecord[]>): Read<Plan> {
  if (!writes.ok) return writes;
  const intent = writes.value.find((record): record is PaymentIntentRecord => record.kind === 'payment_intent');
  if (intent === undefined) throw new Error('a payment step must write its payment intent');
  const after = () => engine.afterPaymentWrites(writes.value);
  return { ok: true, value: { writes: writes.value, body: renderPaymentIntent(intent), after } };
}

function answerRead(ex: Exchange, read: Read<unknown>): void {
  if (read.ok) sendJsonText(ex.res, 200, stringifyInMode(read.value, ex.engine.settings().mode === 'live'), ex.headers);
  else fail(ex, read.failure);
}

function fail(ex: Exchange, failure: StripeFailure): void {
  ex.outcome = outcomeOf(failure);
  sendJsonText(ex.res, failure.statusCode, JSON.stringify(errorJson(failure), null, 2), ex.headers);
}

/** What a refusal counts as: the limiter's and a lock's 429s, a refused key and a missing permission apart from the rest. */
function outcomeOf(failure: StripeFailure): RequestOutcome {
  if (failure.statusCode === 401) return 'unauthorized';
  if (failure.error.code === 'rate_limit') return 'rate_limited';
  if (failure.error.code === 'lock_timeout') return 'lock_timeout';
  if (failure.statusCode === 403) return 'forbidden';
  return 'through';
}
