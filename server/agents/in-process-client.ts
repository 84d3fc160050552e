import { isReceipt, isRefundAnswer, type RefundResult } from '../../shared/client/answers.ts';
import { pollLimits } from '../../shared/client/polling.ts';
import type { InterlockClient } from '../../shared/client/client.ts';
import { errorFromAnswer, type InterlockClientError, unexpectedResponse } from '../../shared/client/errors.ts';
import type { Services } from '../app/services.ts';
import { INTERNAL_ERROR, knownErrorAnswer } from '../app/error-answer.ts';
import type { AgentAnswer, AgentCall } from './answer.ts';
import { askRefund } from './ask-refund.ts';
import { parseRefundBody } from './parse-body.ts';
import { readReceipt, readRefund, verifyWithOwnKey, waitForRefund } from './read-refund.ts';

/** An answer as the HTTP client reads it off the wire: its JSON, parsed again, so nothing but JSON is handed on. */
function asWire(body: unknown): { text: string; json: unknown } {
  const text = JSON.stringify(body);
  return { text, json: JSON.parse(text) };
}

/** Retry-After as the client reads it, in ms. */
function retryAfterMsOf(headers: Record<string, string>): number | null {
  const header = headers['retry-after'];
  return header === undefined ? null : Number(header) * 1000;
}

/** How refund requests made in process are bounded. */
export interface InProcessOptions {
  /** Runs a refund request holding its place among those in flight, or sheds it (server/http/overload.ts). */
  whileRefunding?: <T>(refund: () => Promise<T>) => Promise<T>;
}

/**
 * The typed client's interface over the agents' use cases in this process, for one agent whose
 * token was already checked: the same answers and the same errors (`InterlockClientError`, from the
 * same error bodies) as over HTTP, so the MCP tools over it say exactly what they say over stdio.
 */
export function inProcessClient(services: Services, call: AgentCall, options: InProcessOptions = {}): InterlockClient {
  const whileRefunding = options.whileRefunding ?? (<T>(refund: () => Promise<T>) => refund());
  /** A thrown refusal as the error the HTTP client throws for its answer; our own bug as internal_error, logged. */
  const clientError = (error: unknown): InterlockClientError => {
    const known = knownErrorAnswer(error, services.views);
    if (known === null) call.log.warn({ err: error }, 'an agent call in process failed');
    const answer = known ?? { status: 500, body: INTERNAL_ERROR, retryAfterS: null };
    const { text, json } = asWire(answer.body);
    return errorFromAnswer(answer.status, text, json, answer.retryAfterS === null ? null : answer.retryAfterS * 1000);
  };
  const refundResult = (answer: AgentAnswer<unknown>): RefundResult => {
    const { text, json } = asWire(answer.body);
    const retryAfterMs = retryAfterMsOf(answer.headers);
    if (answer.status !== 200 && answer.status !== 202) throw errorFromAnswer(answer.status, text, json, retryAfterMs);
    if (!isRefundAnswer(json)) throw unexpectedResponse(answer.status, text, 'the use case did not answer a refund status');
    return { httpStatus: answer.status, final: answer.status === 200, answer: json, retryAfterMs };
  };
  const run = async <T>(work: () => Promise<T>): Promise<T> => {
    try {
      return await work();
    } catch (error) {
      throw clientError(error);
    }
  };
  const refundCall = async (work: () => Promise<AgentAnswer<unknown>>) => refundResult(await run(work));

  return {
    requestRefund: (request) =>
      refundCall(() => {
        const body = parseRefundBody(request);
        return whileRefunding(() => askRefund(services, call, body));
      }),
    getRefund: (requestId) => refundCall(() => readRefund(services, call.agent, requestId)),
    async waitForDecision(requestId, options = {}) {
      const { last, polls, waitedMs } = await run(() =>
        waitForRefund(services, call.agent, requestId, {
          timeoutMs: options.timeoutMs ?? pollLimits.timeoutMsDefault,
          ...(options.signal === undefined ? {} : { signal: options.signal }),
          onWait: (progress) => options.onWait?.({ polls: progress.polls, waitedMs: progress.waitedMs, sleepMs: progress.sleepMs, last: refundResult(progress.last) }),
        }),
      );
      return { ...refundResult(last), polls, waitedMs };
    },
    async getReceipt(effectId) {
      const { text, json } = asWire(await run(() => readReceipt(services, call.agent, effectId)));
      if (!isReceipt(json)) throw unexpectedResponse(200, text, 'the use case did not answer a signed receipt');
      return json;
    },
    verifyReceipt: (receipt) => verifyWithOwnKey(services, receipt),
  };
}
