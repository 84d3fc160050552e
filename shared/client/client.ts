import type { RefundRequestBody } from '../api.ts';
import { isReceipt, isRefundAnswer, type Receipt, type RefundResult, type WaitResult } from './answers.ts';
import { AbortedError, errorFromAnswer, InterlockError, NetworkError, TimeoutError, unexpectedResponse } from './errors.ts';
import { jitteredDelayMs, nextDelayMs, parseRetryAfterMs, pollLimits, sleepMsBeforeNextPoll } from './polling.ts';
import { type ReceiptVerifier, receiptVerifier, type VerifyReport } from './receipts.ts';

/** How to reach Interlock, and the clock the client waits on (injected in tests, real by default). */
export interface InterlockClientOptions {
  /** Where Interlock listens, e.g. `http://127.0.0.1:3000`; a path prefix is kept. */
  baseUrl: string;
  /** The agent's bearer token. */
  token: string;
  /** Defaults to the global `fetch` (Node 20 and browsers). */
  fetch?: typeof fetch;
  /** Defaults to a timer, cleared when `signal` ends the wait. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** Milliseconds since the epoch; defaults to `Date.now`. */
  now?: () => number;
  /** A number in [0, 1) for the polling's jitter; defaults to `Math.random`. */
  random?: () => number;
  /** How long one HTTP call may take before it is given up with a TimeoutError (default 30 s); a call's own `timeoutMs` overrides it. */
  callTimeoutMs?: number;
}

/** Options of one call: a signal that ends it (AbortedError), and its own timeout (TimeoutError). */
export interface CallOptions {
  signal?: AbortSignal;
  /** How long this call may take, in ms (default: the client's `callTimeoutMs`). */
  timeoutMs?: number;
}

/** Options of `waitForDecision`. */
export interface WaitOptions {
  /** Ends the wait at once, asleep or reading (AbortedError). */
  signal?: AbortSignal;
  /** How long each read may take (default: the client's `callTimeoutMs`). */
  callTimeoutMs?: number;
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
  requestRefund(request: RefundRequestBody, options?: CallOptions): Promise<RefundResult>;
  /**
   * `GET /v1/refunds/:request_id`: the current status. A refund two people must approve stays QUEUED after the
   * first approval: `answer.approvals` says 1 of 2, and `answer.decision` stays null until the second.
   */
  getRefund(requestId: string, options?: CallOptions): Promise<RefundResult>;
  /**
   * Read the status until it is final or `timeoutMs` has passed, backing off from 1 s to 30 s (each
   * wait less up to a fifth at random, so agents that started together spread out) and honouring
   * `Retry-After`.
   */
  waitForDecision(requestId: string, options?: WaitOptions): Promise<WaitResult>;
  /** `GET /v1/receipts/:effect_id`: the signed receipt. */
  getReceipt(effectId: string, options?: CallOptions): Promise<Receipt>;
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

/**
 * An error a wait reads again after, rather than throwing: told to slow down (`rate_limited`); a
 * server stopping or still starting (`503 not_ready`, which says to ask again); and, once this wait
 * has had an answer, no connection (a server restarting on its address). A read changes nothing,
 * so reading again is always safe; a wait that never reached the server fails at once.
 */
function passing(error: unknown, answered: boolean): error is Error {
  if (error instanceof InterlockError) return error.code === 'rate_limited' || error.code === 'not_ready';
  return answered && error instanceof NetworkError;
}

/** Refuse a call with no decision id: the client never makes one up, since a new id on a retry is a second refund. */
function assertRequestId(requestId: unknown, what: string): asserts requestId is string {
  if (typeof requestId !== 'string' || requestId === '') {
    throw new TypeError(`${what}: request_id is required; it is your own id for this decision, and a retry must send the same one`);
  }
}

/** Refuse a timeout that is not a number of ms above 0. */
function assertTimeout(timeoutMs: number, what: string): void {
  if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) throw new TypeError(`${what} must be a number of ms above 0, not ${timeoutMs}`);
}

function abortedError(what: string, signal: AbortSignal): AbortedError {
  return new AbortedError(`${what} was aborted by its signal; nothing more is known about the request`, { cause: signal.reason });
}

/** `sleeping`, or an AbortedError as soon as `signal` ends the wait. */
async function unlessAborted(sleeping: Promise<void>, signal: AbortSignal | undefined, what: string): Promise<void> {
  if (signal === undefined) return sleeping;
  if (signal.aborted) throw abortedError(what, signal);
  let onAbort = () => {};
  const aborted = new Promise<never>((_resolve, reject) => {
    onAbort = () => reject(abortedError(what, signal));
    signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    await Promise.race([sleeping, aborted]);
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}

/** A client for one agent token. */
export function createInterlockClient(options: InterlockClientOptions): InterlockClient {
  const baseUrl = options.baseUrl.replace(/\/+$/, '');
  // The global fetch is looked up at each call and called unbound: a browser refuses `fetch` called on another object.
  const fetchAnswer = options.fetch ?? ((input: RequestInfo | URL, init?: RequestInit) => globalThis.fetch(input, init));
  const sleep =
    options.sleep ??
    ((ms: number, signal?: AbortSignal) =>
      new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, ms);
        signal?.addEventListener(
          'abort',
          () => {
            clearTimeout(timer);
            resolve();
          },
          { once: true },
        );
      }));
  const now = options.now ?? Date.now;
  const random = options.random ?? Math.random;
  const callTimeoutMs = options.callTimeoutMs ?? pollLimits.callTimeoutMsDefault;
  assertTimeout(callTimeoutMs, 'callTimeoutMs');

  async function call(method: 'GET' | 'POST', path: string, body?: unknown, withToken = true, per: CallOptions = {}): Promise<JsonAnswer> {
    const timeoutMs = per.timeoutMs ?? callTimeoutMs;
    assertTimeout(timeoutMs, 'timeoutMs');
    const what = `${method} ${path}`;
    if (per.signal?.aborted) throw abortedError(what, per.signal);
    const headers: Record<string, string> = { accept: 'application/json' };
    if (withToken) headers.authorization = `Bearer ${options.token}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    // One signal for the exchange: the caller's, or the timeout's, whichever ends it first.
    const controller = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, timeoutMs);
    const onAbort = () => controller.abort();
    per.signal?.addEventListener('abort', onAbort, { once: true });
    const givenUp = (): Error | null => {
      if (timedOut) return new TimeoutError(`${what} had no answer within ${timeoutMs} ms; nothing is known about the request`, timeoutMs);
      if (per.signal?.aborted) return abortedError(what, per.signal);
      return null;
    };
    let response: Response;
    let text: string;
    try {
      try {
        response = await fetchAnswer(baseUrl + path, { method, headers, signal: controller.signal, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
      } catch (cause) {
        throw givenUp() ?? new NetworkError(`could not reach Interlock at ${baseUrl} (${what}): ${messageOf(cause)}`, { cause });
      }
      try {
        text = await response.text();
      } catch (cause) {
        throw givenUp() ?? new NetworkError(`the connection to Interlock broke before its answer to ${what} was read: ${messageOf(cause)}`, { cause });
      }
    } finally {
      clearTimeout(timer);
      per.signal?.removeEventListener('abort', onAbort);
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

  async function refundResult(method: 'GET' | 'POST', path: string, body: unknown, per: CallOptions): Promise<RefundResult> {
    const { status, text, json, retryAfterMs } = await call(method, path, body, true, per);
    if ((status !== 200 && status !== 202) || !isRefundAnswer(json)) {
      throw unexpectedResponse(status, text, `${method} ${path} did not answer a refund status`);
    }
    return { httpStatus: status, final: status === 200, answer: json, retryAfterMs };
  }

  const getRefund = (requestId: string, per: CallOptions = {}) => {
    assertRequestId(requestId, 'getRefund');
    return refundResult('GET', `/v1/refunds/${encodeURIComponent(requestId)}`, undefined, per);
  };

  async function waitForDecision(requestId: string, waitOptions: WaitOptions = {}): Promise<WaitResult> {
    assertRequestId(requestId, 'waitForDecision');
    const timeoutMs = waitOptions.timeoutMs ?? pollLimits.timeoutMsDefault;
    if (!Number.isFinite(timeoutMs) || timeoutMs < 0) throw new TypeError(`waitForDecision: timeoutMs must be a number of ms, 0 or more, not ${timeoutMs}`);
    const { signal } = waitOptions;
    const per: CallOptions = { ...(signal === undefined ? {} : { signal }), ...(waitOptions.callTimeoutMs === undefined ? {} : { timeoutMs: waitOptions.callTimeoutMs }) };
    const startMs = now();
    const deadlineMs = startMs + timeoutMs;
    let delayMs: number | null = null;
    let polls = 0;
    let last: RefundResult | null = null;
    /** True once this wait has read an answer: the server is there, so losing it is a restart. */
    let answered = false;
    for (;;) {
      let retryAfterMs: number | null;
      let slowDown: Error | null = null;
      try {
        polls += 1;
        last = await getRefund(requestId, per);
        retryAfterMs = last.retryAfterMs;
      } catch (error) {
        // Told to slow down, or a restart under way: wait and read again; any other error is the caller's to see.
        if (!passing(error, answered)) throw error;
        slowDown = error;
        retryAfterMs = error instanceof InterlockError ? error.retryAfterMs : null;
      }
      if (slowDown === null) answered = true;
      if (last?.final) return { ...last, polls, waitedMs: now() - startMs };
      const remainingMs = deadlineMs - now();
      if (remainingMs <= 0) {
        if (last === null) throw slowDown ?? new TypeError('waitForDecision: no answer and no error');
        return { ...last, polls, waitedMs: now() - startMs };
      }
      delayMs = nextDelayMs(delayMs);
      const sleepMs = sleepMsBeforeNextPoll(jitteredDelayMs(delayMs, random), retryAfterMs, remainingMs);
      waitOptions.onWait?.({ polls, waitedMs: now() - startMs, sleepMs, last });
      await unlessAborted(sleep(sleepMs, signal), signal, `waitForDecision ${JSON.stringify(requestId)}`);
    }
  }

  const verifier: ReceiptVerifier = receiptVerifier(async () => (await call('GET', '/.well-known/interlock-keys', undefined, false)).json);

  return {
    async requestRefund(request, per = {}) {
      assertRequestId(request?.request_id, 'requestRefund');
      return refundResult('POST', '/v1/refunds', request, per);
    },
    getRefund,
    waitForDecision,
    async getReceipt(effectId, per = {}) {
      const path = `/v1/receipts/${encodeURIComponent(effectId)}`;
      const { status, text, json } = await call('GET', path, undefined, true, per);
      if (!isReceipt(json)) throw unexpectedResponse(status, text, `GET ${path} did not answer a signed receipt`);
      return json;
    },
    verifyReceipt: (receipt) => verifier.verify(receipt),
  };
}
