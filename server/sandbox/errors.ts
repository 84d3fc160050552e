import type { StripeErrorBody, StripeErrorCode, StripeFailure } from './types.ts';

/** A 400 invalid_request_error with a code (null where Stripe sends none) and the offending parameter. */
export function invalidRequest(code: StripeErrorCode | null, message: string, param?: string): StripeFailure {
  const error: StripeErrorBody = { type: 'invalid_request_error', message };
  if (code !== null) error.code = code;
  if (param !== undefined) error.param = param;
  return { statusCode: 400, error };
}

/** A 404 for an object named in the path that the sandbox does not know, worded like Stripe's. */
export function resourceMissing(what: string, id: string, param: string): StripeFailure {
  return {
    statusCode: 404,
    error: { type: 'invalid_request_error', code: 'resource_missing', message: `No such ${what}: '${id}'`, param },
  };
}

/**
 * A 400 for an object named in a parameter (`payment_intent=pi_missing`, `customer`, a list's
 * filter or cursor) that the sandbox does not know: Stripe answers 400 here, 404 only for the path.
 */
export function missingInParam(what: string, id: string, param: string): StripeFailure {
  return { ...resourceMissing(what, id, param), statusCode: 400 };
}

/** 401: no usable test-mode API key. Stripe's answer carries no code, only its type and words. */
export function unauthorized(message: string): StripeFailure {
  return { statusCode: 401, error: { type: 'invalid_request_error', message } };
}

/** `sk_live_51Hab…1234` as Stripe shows a key in its refusals: the prefix, stars, the last four. */
export function maskKey(key: string): string {
  const shownChars = 8 + 4;
  if (key.length <= shownChars) return `${key.slice(0, 8)}****`;
  return `${key.slice(0, 8)}${'*'.repeat(key.length - shownChars)}${key.slice(-4)}`;
}

/** 400: the key was first used with other parameters or another endpoint. */
export function idempotencyMismatch(key: string, detail: string): StripeFailure {
  return {
    statusCode: 400,
    error: {
      type: 'idempotency_error',
      message: `Keys for idempotent requests can only be used ${detail}. Try using a key other than '${key}' if you meant to execute a different request.`,
    },
  };
}

/** 409: another request with the same key is still running; nothing is saved. */
export function idempotencyKeyInUse(key: string): StripeFailure {
  return {
    statusCode: 409,
    error: {
      type: 'invalid_request_error',
      code: 'idempotency_key_in_use',
      message: `There is currently another in-progress request using this Idempotency-Key ('${key}'). Please try again later.`,
    },
  };
}

/** 429: refused by the rate limiter before the endpoint runs, in Stripe's words. */
export function rateLimited(): StripeFailure {
  return {
    statusCode: 429,
    error: {
      type: 'invalid_request_error',
      code: 'rate_limit',
      message: 'Request rate limit exceeded. Learn more about rate limits here https://stripe.com/docs/rate-limits.',
    },
  };
}

/** 429: another request or a Stripe process holds the object this write needs; nothing was done. */
export function lockTimeout(): StripeFailure {
  return {
    statusCode: 429,
    error: {
      type: 'invalid_request_error',
      code: 'lock_timeout',
      message:
        'This object cannot be accessed right now because another API request or Stripe process is currently accessing it. If you see this error intermittently, retry the request. If you see this error frequently and are making multiple concurrent requests to a single object, make your requests serially or at a lower rate.',
    },
  };
}

/** 429: the sandbox holds as many idempotency keys as it may; refused before the endpoint runs. */
export function tooManyKeys(): StripeFailure {
  return {
    statusCode: 429,
    error: {
      type: 'invalid_request_error',
      code: 'rate_limit',
      message: 'Too many idempotency keys are saved; try later.',
    },
  };
}

/** 500: Stripe's answer when something went wrong on its side. */
export function apiError(): StripeFailure {
  return {
    statusCode: 500,
    error: { type: 'api_error', message: 'An unknown error occurred while processing the request (sandbox fault).' },
  };
}

/** 404 for a path the sandbox does not serve. */
export function unrecognizedUrl(method: string, path: string): StripeFailure {
  return {
    statusCode: 404,
    error: { type: 'invalid_request_error', message: `Unrecognized request URL (${method}: ${path}).` },
  };
}

/** Where Stripe documents an error code: `https://stripe.com/docs/error-codes/resource-missing`. */
export function docUrlOf(code: StripeErrorCode): string {
  return `https://stripe.com/docs/error-codes/${code.replaceAll('_', '-')}`;
}

/**
 * The JSON body of an error answer, its fields in Stripe's (alphabetical) order; an error with a
 * code carries the page that documents it (`doc_url`), as every Stripe error with a code does.
 */
export function errorJson(failure: StripeFailure): { error: StripeErrorBody } {
  const { code, message, param, type } = failure.error;
  return {
    error: {
      ...(code === undefined ? {} : { code, doc_url: docUrlOf(code) }),
      message,
      ...(param === undefined ? {} : { param }),
      type,
    },
  };
}

/**
 * A refusal raised by the programmatic API (`handRefund`, `openDispute`, `settle`), carrying the
 * same Stripe error an HTTP caller would get.
 */
export class SandboxError extends Error {
  readonly statusCode: number;
  readonly type: StripeErrorBody['type'];
  readonly code: StripeErrorCode | undefined;
  readonly param: string | undefined;

  constructor(failure: StripeFailure) {
    super(failure.error.message);
    this.name = 'SandboxError';
    this.statusCode = failure.statusCode;
    this.type = failure.error.type;
    this.code = failure.error.code;
    this.param = failure.error.param;
  }
}
