import { matchPath } from './http.ts';

/**
 * Every operation the sandbox serves, named as Stripe counts its endpoints for the per-endpoint
 * rate limit: `POST /v1/refunds`, `GET /v1/refunds` and `GET /v1/refunds/:id` are three.
 */
export const STRIPE_OPERATIONS = [
  'GET /v1/payment_intents',
  'GET /v1/payment_intents/:id',
  'GET /v1/charges',
  'GET /v1/charges/:id',
  'GET /v1/charges/:id/refunds',
  'GET /v1/refunds',
  'GET /v1/refunds/:id',
  'GET /v1/disputes',
  'GET /v1/disputes/:id',
  'GET /v1/customers',
  'GET /v1/customers/:id',
  'GET /v1/payment_methods/:id',
  'POST /v1/refunds',
  'POST /v1/payment_intents',
  'POST /v1/payment_intents/:id/confirm',
  'POST /v1/customers',
] as const;
/** One operation the sandbox serves. */
export type StripeOperation = (typeof STRIPE_OPERATIONS)[number];

/** A request to a path the sandbox does not serve: one name for all of them, so the counts stay bounded. */
export const UNRECOGNIZED_OPERATION = 'unrecognized';
/** What a request is counted and limited as. */
export type OperationName = StripeOperation | typeof UNRECOGNIZED_OPERATION;

/** The operation a request to `/v1/...` is, by its method and the pattern its path matches. */
export function operationOf(method: string, path: string): OperationName {
  for (const operation of STRIPE_OPERATIONS) {
    const space = operation.indexOf(' ');
    if (operation.slice(0, space) === method && matchPath(operation.slice(space + 1), path) !== null) return operation;
  }
  return UNRECOGNIZED_OPERATION;
}
