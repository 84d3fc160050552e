import type { RefundRequestBody } from '../api.ts';
import { isReceipt, isRefundAnswer, type Receipt, type RefundResult, type WaitResult } from './answers.ts';
import { errorFromAnswer, InterlockError, NetworkError, unexpectedResponse } from './errors.ts';
import { nextDelayMs, parseRetryAfterMs, pollLimits, sleepMsBeforeNextPoll } from './polling.ts';
import { type ReceiptVerifier, receiptVerifier, type VerifyReport } from './receipts.ts';

/** How to reach Interlock, and the clock the client waits on (injected in tests, real by default). */
export interface InterlockClientOptions {
  /** Where Interlock listens, e.g. `http://127.0.0.1:3000`; a path prefix is kept. */
  baseUrl: string;
  /** The agent's bearer token. */
  token: string;
  /** Defaults to the global `fetch` (Node 20 and browsers). */
  fetch?: typeof fetch;
  /** Defaults to a timer. */
  sleep?: (ms: number) => Promise<void>;
  /** Milliseconds since the epoch; defaults to `Date.now`. */
  now?: () => number;
}

/** Options of `waitForDecision`. */
export interface WaitOptions {
  /** Return with the current answer once this long has passed (default 60 s); never sleeps past it. */
  timeoutMs?: number;
  /** Told before each sleep, e.g. to report progress: the reads so far, the time waited, and the sleep to come. */
  onWait?: (progress: WaitProgress) => void;
}

/** Where a wait stands before its next sleep. */
export interface WaitProgress {
  polls: number;
  waitedMs: number;
  sleepMs: number;
  /** The last answer read; null while the server only asked to slow down. */
  last: RefundResult | null;
}

/** The agents' API (docs/agents/http-api.md), typed. Every method throws an `InterlockClientError` when no answer of its kind came. */
export interface InterlockClient {
  /**
   * `POST /v1/refunds`. `request_id` is your decision id: send the same one again on a retry, never a new one.
   * `on_behalf_of` names the person the refund benefits (their Interlock name or email), who may not approve it;
   * an approver whose config email is the payment's customer email may not either. It is part of the request.
   */
  requestRefund(request: RefundRequestBody): Promise<RefundResult>;
  /**
   * `GET /v1/refunds/:request_id`: the current status. A refund two people must approve stays QUEUED after the
   * first approval: `answer.approvals` says 1 of 2, and `answer.decision` stays null until the second.
   */
  getRefund(requestId: string): Promise<RefundResult>;
  /** Read the status until it is final or `timeoutMs` has passed, backing off from 1 s to 30 s and honouring `Retry-After`. */
  waitForDecision(requestId: string, options?: WaitOptions): Promise<WaitResult>;
  /** `GET /v1/receipts/:effect_id`: the signed receipt. */
  getReceipt(effectId: string): Promise<Receipt>;
  /** Verify a receipt offline against the keys at `/.well-known/interlock-keys` (fetched once). */
  verifyReceipt(receipt: unknown): Promise<VerifyReport>;
}

/** What one HTTP exchange gave, once it is known to be a 2xx JSON answer. */
interface JsonAnswer {
  status: number;
  text: string;
  json: unknown;
  retryAfterMs: number | null;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Refuse a call with no decision id: the client never makes one up, since a new id on a retry is a second refund. */
function assertRequestId(requestId: unknown, what: string): asserts requestId is string {
  if (typeof requestId !== 'string' || requestId === '') {
    throw new TypeError(`${what}: request_id is required; it is your own id for this decision, and a retry must send the same one`);
  }
}

/** A client for one agent token. */
export function createInterlockClient(options: InterlockClientOptions): InterlockClient {
  const baseUrl = options.baseUrl.replace(/\/+$/, '');
  // The global fetch is looked up at each call and called unbound: a browser refuses `fetch` called on another object.
  const fetchAnswer = options.fetch ?? ((input: RequestInfo | URL, init?: RequestInit) => globalThis.fetch(input, init));
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const now = options.now ?? Date.now;

  async function call(method: 'GET' | 'POST', path: string, body?: unknown, withToken = true): Promise<JsonAnswer> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (withToken) headers.authorization = `Bearer ${options.token}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    let response: Response;
    let text: string;
    try {
      response = await fetchAnswer(baseUrl + path, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    } catch (cause) {
      throw new NetworkError(`could not reach Interlock at ${baseUrl} (${method} ${path}): ${messageOf(cause)}`, { cause });
    }
    try {
      text = await response.text();
    } catch (cause) {
      throw new NetworkError(`the connection to Interlock broke before its answer to ${method} ${path} was read: ${messageOf(cause)}`, { cause });
    }
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    const retryAfterMs = parseRetryAfterMs(response.headers.get('retry-after'), now());
    if (!response.ok) throw errorFromAnswer(response.status, text, json, retryAfterMs);
    if (json === undefined) throw unexpectedResponse(response.status, text, `${method} ${path} answered something that is not JSON`);
    return { status: response.status, text, json, retryAfterMs };
  }

  async function refundResult(method: 'GET' | 'POST', path: string, body?: unknown): Promise<RefundResult> {
    const { status, text, json, retryAfterMs } = await call(method, path, body);
    if ((status !== 200 && status !== 202) || !isRefundAnswer(json)) {
      throw unexpectedResponse(status, text, `${method} ${path} did not answer a refund status`);
    }
    return { httpStatus: status, final: status === 200, answer: json, retryAfterMs };
  }

  const getRefund = (requestId: string) => {
    assertRequestId(requestId, 'getRefund');
    return refundResult('GET', `/v1/refunds/${encodeURIComponent(requestId)}`);
  };

  async function waitForDecision(requestId: string, waitOptions: WaitOptions = {}): Promise<WaitResult> {
    assertRequestId(requestId, 'waitForDecision');
    const timeoutMs = waitOptions.timeoutMs ?? pollLimits.timeoutMsDefault;
    if (!Number.isFinite(timeoutMs) || timeoutMs < 0) throw new TypeError(`waitForDecision: timeoutMs must be a number of ms, 0 or more, not ${timeoutMs}`);
    const startMs = now();
    const deadlineMs = startMs + timeoutMs;
    let delayMs: number | null = null;
    let polls = 0;
    let last: RefundResult | null = null;
    for (;;) {
      let retryAfterMs: number | null;
      let slowDown: InterlockError | null = null;
      try {
        polls += 1;
        last = await getRefund(requestId);
        retryAfterMs = last.retryAfterMs;
      } catch (error) {
        // Told to slow down: wait as asked and read again; any other error is the caller's to see.
        if (!(error instanceof InterlockError && error.code === 'rate_limited')) throw error;
        slowDown = error;
        retryAfterMs = error.retryAfterMs;
      }
      if (last?.final) return { ...last, polls, waitedMs: now() - startMs };
      const remainingMs = deadlineMs - now();
      if (remainingMs <= 0) {
        if (last === null) throw slowDown ?? new TypeError('waitForDecision: no answer and no error');
        return { ...last, polls, waitedMs: now() - startMs };
      }
      delayMs = nextDelayMs(delayMs);
      const sleepMs = sleepMsBeforeNextPoll(delayMs, retryAfterMs, remainingMs);
      waitOptions.onWait?.({ polls, waitedMs: now() - startMs, sleepMs, last });
      await sleep(sleepMs);
    }
  }

  const verifier: ReceiptVerifier = receiptVerifier(async () => (await call('GET', '/.well-known/interlock-keys', undefined, false)).json);

  return {
    async requestRefund(request) {
      assertRequestId(request?.request_id, 'requestRefund');
      return refundResult('POST', '/v1/refunds', request);
    },
    getRefund,
    waitForDecision,
    async getReceipt(effectId) {
      const path = `/v1/receipts/${encodeURIComponent(effectId)}`;
      const { status, text, json } = await call('GET', path);
      if (!isReceipt(json)) throw unexpectedResponse(status, text, `GET ${path} did not answer a signed receipt`);
      return json;
    },
    verifyReceipt: (receipt) => verifier.verify(receipt),
  };
}
