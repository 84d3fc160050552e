// The contract's closed sets of words: error codes with their statuses, decision actions, roles.
// Both the types of shared/api.ts and the schemas of shared/schemas.ts are built on them.

/** Error codes every route answers with, and their HTTP statuses. */
export const ERROR_CODES = {
  validation_failed: 400,
  signature_invalid: 400,
  unauthorized: 401,
  session_expired: 401,
  forbidden: 403,
  csrf_failed: 403,
  /**
   * An approval by the person the refund benefits: named by the request's `on_behalf_of`, or the
   * payment's customer email is the approver's. Nothing was recorded or sent.
   */
  self_approval: 403,
  /** A second approval of a two-approver item by the person who gave the first: nothing was recorded. */
  same_approver: 409,
  not_found: 404,
  /** A request id already used with another payload (docs/agents/http-api.md): nothing was written or sent. */
  conflicting_payload: 409,
  /**
   * A request naming a currency that is not its payment's: its amount was worked out in another
   * currency. Known only once the payment is read, so not a validation failure; nothing is written
   * or sent (and nothing journaled), and the same request in the payment's currency is taken.
   */
  currency_mismatch: 422,
  /** A method a path does not offer (GET or DELETE of the stateless MCP endpoint): the Allow header names the one it does. */
  method_not_allowed: 405,
  payload_too_large: 413,
  unsupported_media_type: 415,
  /**
   * A request whose Host names none of the server's names (public_url's host, allowed_hosts, the
   * loopback names): a page on another name that resolves here is not served. `/healthz` answers any.
   */
  host_not_allowed: 421,
  rate_limited: 429,
  internal_error: 500,
  stripe_unavailable: 503,
  not_ready: 503,
  /** A stored journal entry failed its hash or shape check: nothing is shown, written or sent until an operator restarts Interlock. */
  journal_unavailable: 503,
} as const;
/** One stable error code. */
export type ErrorCode = keyof typeof ERROR_CODES;

/** Decisions an approver can take on an item. `close` rejects an ambiguous item. */
export const DECISION_ACTIONS = ['approve', 'reject', 'repair', 'close'] as const;
/** One decision action. */
export type DecisionAction = (typeof DECISION_ACTIONS)[number];

/** Roles in the config. */
export const ROLES = ['approver', 'finance'] as const;
/** One role. */
export type Role = (typeof ROLES)[number];
