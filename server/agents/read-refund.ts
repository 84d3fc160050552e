import type { RefundAnswer } from '../../shared/api.ts';
import type { VerifyReport } from '../../shared/receipts/report.ts';
import { jitteredDelayMs, nextDelayMs, sleepMsBeforeNextPoll } from '../../shared/client/polling.ts';
import { AppError } from '../app/app-error.ts';
import { requestKeyOf, type Services } from '../app/services.ts';
import type { AgentConfig } from '../config/schema.ts';
import { boundRequest, waitsItsTurn } from '../inbox/state.ts';
import { type SignedReceipt, signReceipt } from '../receipts/receipts.ts';
import { verifyReceipt } from '../receipts/verify.ts';
import { refundHttpStatus } from '../refunds/answers.ts';
import { type AgentAnswer, agentAnswer, retryAfterSOf } from './answer.ts';
import { answerOf, chainOf } from './ask-refund.ts';

/**
 * `GET /v1/refunds/:request_id`: a refund request's current status, 202 while it is not final and
 * 200 once it is, with Retry-After while it waits its turn for Stripe. 404 not_found for an id the
 * agent never asked under. Changes nothing.
 */
export async function readRefund(services: Services, agent: AgentConfig, requestId: string): Promise<AgentAnswer<RefundAnswer>> {
  const effectId = services.gate.effectIdOf({ requestKey: requestKeyOf({ id: requestId, agent: agent.name }), effect: {} });
  const chain = await chainOf(services, effectId);
  if (chain.length === 0) throw new AppError('not_found', `no refund request ${requestId}`);
  const answer = answerOf(services, requestId, effectId, chain);
  // Still waiting its turn for Stripe: when to ask again, from its place in the queue.
  const retryAfterS = waitsItsTurn(chain) ? retryAfterSOf(services.turns.expectedWaitMs(effectId)) : null;
  return agentAnswer(refundHttpStatus(answer.status), answer, retryAfterS);
}

/**
 * `GET /v1/receipts/:effect_id`: the signed receipt of one of the agent's own requests, signed over
 * the entries the views verified, never over whatever rows the table holds now. Another agent's,
 * or none, is 404 not_found.
 */
export async function readReceipt(services: Services, agent: AgentConfig, effectId: string): Promise<SignedReceipt> {
  const chain = await chainOf(services, effectId);
  const owner = boundRequest(chain);
  if (!owner || owner.agent !== agent.name) throw new AppError('not_found', 'no such receipt');
  return signReceipt(effectId, chain, services.signingKey);
}

/** A receipt checked against this server's own signing key, as anyone checks it against the published keys. */
export async function verifyWithOwnKey(services: Services, receipt: unknown): Promise<VerifyReport> {
  return verifyReceipt(receipt, new Map([[services.signingKey.keyId, services.signingKey.publicKeyPem]]));
}

/** Where a wait stands before its next sleep. */
export interface RefundWaitProgress {
  polls: number;
  waitedMs: number;
  sleepMs: number;
  last: AgentAnswer<RefundAnswer>;
}

/** How long to wait, what ends a wait early, and whom to tell before each sleep. */
export interface RefundWaitOptions {
  timeoutMs: number;
  signal?: AbortSignal;
  onWait?: (progress: RefundWaitProgress) => void;
  /** The clock and the sleep (real ones by default). */
  nowMs?: () => number;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  random?: () => number;
}

/** What a wait ends with: the last answer read, how many reads it took, and how long. */
export interface RefundWaited {
  last: AgentAnswer<RefundAnswer>;
  polls: number;
  waitedMs: number;
}

/** A timer that ends early, never throwing, when `signal` aborts. */
function sleepUnlessAborted(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        resolve();
      },
      { once: true },
    );
  });
}

/**
 * Read a refund's status until it is final (200) or `timeoutMs` has passed, on the typed client's
 * schedule: 1 s, doubling to 30 s, each less up to a fifth at random, never before Retry-After and
 * never past the deadline. A read that fails ends the wait with its error. Changes nothing.
 */
export async function waitForRefund(services: Services, agent: AgentConfig, requestId: string, options: RefundWaitOptions): Promise<RefundWaited> {
  const nowMs = options.nowMs ?? Date.now;
  const sleep = options.sleep ?? sleepUnlessAborted;
  const random = options.random ?? Math.random;
  const startMs = nowMs();
  const deadlineMs = startMs + options.timeoutMs;
  let delayMs: number | null = null;
  for (let polls = 1; ; polls++) {
    const last = await readRefund(services, agent, requestId);
    const remainingMs = deadlineMs - nowMs();
    if (last.status === 200 || remainingMs <= 0 || options.signal?.aborted) return { last, polls, waitedMs: nowMs() - startMs };
    delayMs = nextDelayMs(delayMs);
    const retryAfter = last.headers['retry-after'];
    const sleepMs = sleepMsBeforeNextPoll(jitteredDelayMs(delayMs, random), retryAfter === undefined ? null : Number(retryAfter) * 1000, remainingMs);
    options.onWait?.({ polls, waitedMs: nowMs() - startMs, sleepMs, last });
    await sleep(sleepMs, options.signal);
  }
}
