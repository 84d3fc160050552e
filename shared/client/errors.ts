import { ERROR_CODES, type ErrorCode, type RequestPayload } from '../api.ts';
import { isJsonObject, type JsonObject } from '../json.ts';

/**
 * Errors the typed client throws. An answer from Interlock is an `InterlockError` carrying the
 * server's stable code; a request that never got a contract answer (no connection, or something
 * that is not Interlock answering) has a client-only code, so the two are never confused.
 */

/** Codes only the client gives: Interlock's own answer was never read. */
export const CLIENT_ERROR_CODES = ['network_error', 'unexpected_response', 'timeout', 'aborted'] as const;
/** One client-only code. */
export type ClientErrorCode = (typeof CLIENT_ERROR_CODES)[number];

/** What the client knows of an error answer when it builds the error. */
interface InterlockErrorInit<C extends ErrorCode> {
  code: C;
  status: number;
  message: string;
  body: JsonObject;
  retryAfterMs: number | null;
}

/** Interlock answered with an error: its HTTP status, its stable code, and the whole body. */
export class InterlockError<C extends ErrorCode = ErrorCode> extends Error {
  readonly code: C;
  readonly status: number;
  readonly body: JsonObject;
  /** From `Retry-After` (always on `429 rate_limited`): wait this long before sending the same request again. */
  readonly retryAfterMs: number | null;

  constructor(init: InterlockErrorInit<C>) {
    super(init.message);
    this.name = 'InterlockError';
    this.code = init.code;
    this.status = init.status;
    this.body = init.body;
    this.retryAfterMs = init.retryAfterMs;
  }
}

/** `409 conflicting_payload`: the request id was already used with another payload; nothing was written or sent. */
export class ConflictingPayloadError extends InterlockError<'conflicting_payload'> {
  /** The payload bound to the request id, normalised. */
  readonly recorded: RequestPayload;
  /** The payload this call offered, normalised the same way. */
  readonly offered: RequestPayload;

  constructor(init: InterlockErrorInit<'conflicting_payload'> & { recorded: RequestPayload; offered: RequestPayload }) {
    super(init);
    this.name = 'ConflictingPayloadError';
    this.recorded = init.recorded;
    this.offered = init.offered;
  }
}

/** Interlock could not be reached, or the connection broke before its answer was read: nothing is known about the request. */
export class NetworkError extends Error {
  readonly code = 'network_error';

  constructor(message: string, options: { cause: unknown }) {
    super(message, options);
    this.name = 'NetworkError';
  }
}

/**
 * No answer came within the call's timeout (`callTimeoutMs`, or the call's own `timeoutMs`): the
 * call was given up, and nothing is known about the request. Sending it again with the same
 * request_id is safe.
 */
export class TimeoutError extends Error {
  readonly code = 'timeout';
  /** The timeout the call was given, in ms. */
  readonly timeoutMs: number;

  constructor(message: string, timeoutMs: number) {
    super(message);
    this.name = 'TimeoutError';
    this.timeoutMs = timeoutMs;
  }
}

/**
 * The caller's `AbortSignal` ended the call (or the wait): nothing more was read, and for a call
 * already sent nothing is known about the request. Sending it again with the same request_id is safe.
 */
export class AbortedError extends Error {
  readonly code = 'aborted';

  constructor(message: string, options: { cause: unknown }) {
    super(message, options);
    this.name = 'AbortedError';
  }
}

/** Something answered that is not Interlock's contract (not JSON, an unknown code, a missing field): a proxy, or another server. */
export class UnexpectedResponseError extends Error {
  readonly code = 'unexpected_response';
  readonly status: number;
  /** The start of what was answered, for a person to read. */
  readonly bodyText: string;

  constructor(message: string, status: number, bodyText: string) {
    super(message);
    this.name = 'UnexpectedResponseError';
    this.status = status;
    this.bodyText = bodyText;
  }
}

/** Every error the client throws, told apart by `code`: `switch (err.code)` narrows to the class. */
export type InterlockClientError =
  | InterlockError<Exclude<ErrorCode, 'conflicting_payload'>>
  | ConflictingPayloadError
  | NetworkError
  | UnexpectedResponseError
  | TimeoutError
  | AbortedError;

/** True for an error the client threw about a request (not a TypeError for a call it refused to make). */
export function isInterlockClientError(value: unknown): value is InterlockClientError {
  return (
    value instanceof InterlockError ||
    value instanceof NetworkError ||
    value instanceof UnexpectedResponseError ||
    value instanceof TimeoutError ||
    value instanceof AbortedError
  );
}

/** How much of an unexpected body an error keeps. */
const BODY_TEXT_CHARS_MAX = 500;

function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && Object.hasOwn(ERROR_CODES, value);
}

function isRequestPayload(value: unknown): value is RequestPayload {
  return (
    isJsonObject(value) &&
    typeof value.payment_intent === 'string' &&
    typeof value.amount === 'number' &&
    (value.reason === undefined || typeof value.reason === 'string') &&
    (value.context_url === undefined || typeof value.context_url === 'string') &&
    (value.on_behalf_of === undefined || typeof value.on_behalf_of === 'string') &&
    Array.isArray(value.flags) &&
    value.flags.every((flag) => typeof flag === 'string')
  );
}

/** An unexpected answer, named by its status, with the start of its body. */
export function unexpectedResponse(status: number, text: string, what: string): UnexpectedResponseError {
  return new UnexpectedResponseError(`HTTP ${status}: ${what}`, status, text.slice(0, BODY_TEXT_CHARS_MAX));
}

/** The error for a non-2xx answer: Interlock's own when the body is its error shape, else an unexpected response. */
export function errorFromAnswer(status: number, text: string, json: unknown, retryAfterMs: number | null): InterlockClientError {
  const error = isJsonObject(json) ? json.error : undefined;
  if (!isJsonObject(json) || !isJsonObject(error) || typeof error.message !== 'string') {
    return unexpectedResponse(status, text, 'not an Interlock error answer ({"error":{"code","message"}})');
  }
  const { code, message } = error;
  if (!isErrorCode(code)) return unexpectedResponse(status, text, `an error code this client does not know: ${String(code)}`);
  if (code === 'conflicting_payload') {
    if (!isRequestPayload(json.recorded) || !isRequestPayload(json.offered)) return unexpectedResponse(status, text, 'conflicting_payload without both payloads');
    return new ConflictingPayloadError({ code, status, message, body: json, retryAfterMs, recorded: json.recorded, offered: json.offered });
  }
  return new InterlockError({ code, status, message, body: json, retryAfterMs });
}
