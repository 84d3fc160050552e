import Stripe from 'stripe';
import { type ConflictingPayloadAnswer, ERROR_CODES, type RefundAnswer, type RefundRequest, type RefundRequestBody, requestPayload } from '../../shared/api.ts';
import type { Entry } from '../../shared/entries.ts';
import { isJsonObject, type JsonObject } from '../../shared/json.ts';
import { limits } from '../../shared/limits.ts';
import type { Status } from '../../shared/statuses.ts';
import { AppError } from '../app/app-error.ts';
import { displayNameOf, livenessOf, type Services } from '../app/services.ts';
import { type FreshFacts, InvalidEffectError } from '../gate/target.ts';
import { boundRequest, waitsItsTurn } from '../inbox/state.ts';
import { answerHttpStatus, boundBeforeReasonsKept, conflictingPayload, currencyMismatch, paymentCurrencyOf, refundAnswer } from '../refunds/answers.ts';
import { withStripeClass } from '../stripe/paced-client.ts';
import { isJournalFailure } from '../views/failures.ts';
import { type AgentAnswer, type AgentCall, agentAnswer, retryAfterSOf } from './answer.ts';

/** What asking for a refund answers: the refund's status, or the conflict with the payload bound first. */
export type RefundAsked = AgentAnswer<RefundAnswer | ConflictingPayloadAnswer>;

/** True for facts read with the journal position before them (`FreshFacts`), rather than facts alone. */
function isFresh(read: FreshFacts | JsonObject): read is FreshFacts {
  return typeof read.key === 'string' && typeof read.seq === 'number' && typeof read.readAtWallMs === 'number' && isJsonObject(read.facts);
}

/** A Stripe read that failed before anything was written: said plainly. */
export function stripeFailure(error: unknown): AppError | null {
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

/** The request's chain as the views verified it, caught up with everything durable now. */
export async function chainOf(services: Services, effectId: string): Promise<readonly Entry[]> {
  return (await services.views.current()).chain(effectId);
}

/** The answer to an agent about a chain, with the names and approvals in force now. */
export function answerOf(services: Services, requestId: string, effectId: string, chain: readonly Entry[], status?: Status): RefundAnswer {
  return refundAnswer(requestId, effectId, chain, status, (name) => displayNameOf(services.config, name), livenessOf(services));
}

/**
 * `POST /v1/refunds` (docs/agents/http-api.md): ask for a refund with a body its schema checked. A
 * retry is always safe: the same request id with the same payload answers the current status and
 * changes nothing; with another it is 409 conflicting_payload, and nothing is written or sent.
 */
export async function askRefund(services: Services, call: AgentCall, body: RefundRequestBody): Promise<RefundAsked> {
  const offered = requestPayload(body);
  const bound: RefundRequest = { id: body.request_id, agent: call.agent.name, ...offered };
  const effectId = services.inbox.effectIdOf(bound);
  const conflictWith = (chain: readonly Entry[]) => {
    const recorded = boundRequest(chain);
    return recorded ? conflictingPayload(body.request_id, recorded, offered, boundBeforeReasonsKept(chain)) : null;
  };
  // The same request id is the same decision forever: another payload under it is refused
  // before the inbox is asked anything, so nothing is written or sent, whatever state it is in.
  const before = await chainOf(services, effectId);
  const conflict = conflictWith(before);
  if (conflict) return agentAnswer(ERROR_CODES.conflicting_payload, conflict);
  const waiting = before.length === 0 ? null : waitsItsTurn(before);
  let status: Status | null = null;
  if (before.length === 0 || waiting) {
    // A new request: its read and its create, taken together now, or it waits its turn.
    const grant = waiting ? null : await services.turns.admit();
    if (grant === null) {
      // A request that names its currency is checked against the payment before anything is
      // written, so it cannot wait its turn in the journal: it is asked to come again.
      if (body.currency !== undefined && before.length === 0) {
        throw new AppError(
          'rate_limited',
          'Stripe’s rate budget has no room to check the payment’s currency now; nothing was written, send this request again later',
          retryAfterSOf(services.turns.expectedWaitMs()),
        );
      }
      return waitTurn(services, call, effectId, bound, before, conflictWith);
    }
    const decide = async () => {
      const read = await checkCurrency(services, body, before, bound);
      return read === undefined || !isFresh(read) ? services.inbox.submit(bound, read, undefined, call.callId) : services.inbox.submit(bound, undefined, read, call.callId);
    };
    status = await submitWithin(services, call, effectId, () => withStripeClass('request', decide, grant), () => grant.release());
  } else {
    // The same payload again: the inbox is given the request exactly as it was bound.
    await checkCurrency(services, body, before, bound);
    status = await submitWithin(services, call, effectId, () => services.inbox.submit(boundRequest(before) ?? bound, undefined, undefined, call.callId));
  }
  // The answer is the chain's own, read as the views verified it; catching up with it also
  // tells the live pages now rather than at the next poll.
  const chain = await chainOf(services, effectId);
  // Two first requests under one id with other payloads raced: the one bound first won, and
  // the inbox and the gate wrote nothing for this one (they check the binding as they write).
  const lost = conflictWith(chain);
  if (lost) return agentAnswer(ERROR_CODES.conflicting_payload, lost);
  const answer = answerOf(services, body.request_id, effectId, chain, status ?? undefined);
  return agentAnswer(answerHttpStatus(answer, chain), answer);
}

/**
 * Submit, and answer within `limits.refundAnswerWithinMs` whatever happens: a send still going on
 * then (Stripe busy, its 429 retried under the same key) finishes on its own and the agent is
 * answered from the chain (IN_FLIGHT, 202). A failure before anything was written is the
 * agent's to hear; after it, the journal says what stands.
 */
async function submitWithin(services: Services, call: AgentCall, effectId: string, submit: () => Promise<Status>, done: () => void = () => {}): Promise<Status | null> {
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
    const chain = await chainOf(services, effectId);
    if (chain.length === 0) throw stripeFailure(error) ?? error;
    // Something was written before the failure (an unknown send outcome): the journal says what stands.
    call.log.warn({ err: error, effectId }, 'refund submit ended in an unknown outcome; recovery settles it');
    return null;
  } finally {
    clearTimeout(timer);
    running.catch((error: unknown) => call.log.warn({ err: error, effectId }, 'a refund send went on after its answer and failed; recovery settles it'));
  }
}

/**
 * The Stripe budget has no room for this request now: it is journaled bound to its payload with
 * no facts yet, queued in arrival order, and answered 202 with the expected wait. Beyond what the
 * budget sends in ten minutes, it is answered 429 with nothing written.
 */
async function waitTurn(
  services: Services,
  call: AgentCall,
  effectId: string,
  bound: RefundRequest,
  before: readonly Entry[],
  conflictWith: (chain: readonly Entry[]) => ConflictingPayloadAnswer | null,
): Promise<RefundAsked> {
  const retryAfterS = retryAfterSOf(services.turns.expectedWaitMs(before.length === 0 ? undefined : effectId));
  if (before.length === 0) {
    if (services.turns.full) {
      throw new AppError('rate_limited', `${services.turns.length} refund requests already wait their turn for Stripe; nothing was written, send this one again later`, retryAfterS);
    }
    if (!(await services.turns.accept(effectId, bound, call.callId))) {
      // Another request under this id bound it first: a conflict, or the same request's status.
      const lost = conflictWith(await chainOf(services, effectId));
      if (lost) return agentAnswer(ERROR_CODES.conflicting_payload, lost);
    }
  }
  services.turns.enqueue(effectId);
  const chain = await chainOf(services, effectId);
  const answer = answerOf(services, bound.id, effectId, chain);
  return agentAnswer(answerHttpStatus(answer, chain), answer, waitsItsTurn(chain) ? retryAfterS : null);
}

/**
 * Refuse a request whose `currency` is not its payment's (422 currency_mismatch) before anything
 * is written or sent. The payment's currency is known only from the payment: from the facts its
 * request id was bound on, or, for a new request, read from Stripe now; those facts are returned
 * for the submit to decide on, so the payment is not read twice. Nothing for a request without one.
 */
async function checkCurrency(services: Services, body: RefundRequestBody, chain: readonly Entry[], request: RefundRequest): Promise<FreshFacts | JsonObject | undefined> {
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
  if (mismatch) throw new AppError('currency_mismatch', mismatch);
  return chain.length === 0 ? facts : undefined;
}
