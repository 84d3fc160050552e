import type { RefundAnswer } from '../api.ts';
import type { Entry } from '../entries.ts';
import { isJsonObject } from '../json.ts';
import { WAITING_FOR, type WaitingFor } from '../statuses.ts';

/**
 * What a QUEUED answer waits for: `person` (an approver must decide it) or `stripe` (its turn to
 * reach Stripe within its rate limits: no person has it, nothing was sent yet); null when it is not
 * QUEUED. An answer from a server that predates `waiting_for` is told apart by its words, as the
 * server wrote them for a wait for Stripe.
 */
export function waitingForOf(answer: RefundAnswer): WaitingFor | null {
  if (answer.status !== 'QUEUED' && (answer.waiting_for ?? null) === null) return null;
  const said = WAITING_FOR.find((known) => known === answer.waiting_for);
  if (said !== undefined) return said;
  return answer.status === 'QUEUED' ? (answer.why.startsWith('it is waiting its turn to reach Stripe') ? 'stripe' : 'person') : null;
}

/** What the client returns for a refund request, to POST and GET alike. */
export interface RefundResult {
  /**
   * 200 once the status is final, 202 while it is QUEUED, IN_FLIGHT or APPROVED (docs/agents/http-api.md). A QUEUED
   * request waits for a person or for its turn to reach Stripe: `answer.waiting_for` says which.
   */
  httpStatus: 200 | 202;
  /** True once Interlock answers 200: asking again will not change the status by itself. */
  final: boolean;
  answer: RefundAnswer;
  /** From a `Retry-After` header on the answer, when the server sent one. */
  retryAfterMs: number | null;
}

/** What `waitForDecision` returns: the last answer, whether it is final, and what the wait cost. */
export interface WaitResult extends RefundResult {
  /** How many times the request was read. */
  polls: number;
  /** How long the wait took on the client's clock. */
  waitedMs: number;
}

/** A signed receipt as `GET /v1/receipts/:effect_id` answers it: an effect's whole chain and a signature over its end. */
export interface Receipt {
  /** The receipt version, which says what the signature covers (docs/agents/http-api.md); absent on a v1 receipt, from a server before versions. */
  v?: number;
  effect_id: string;
  entries: Entry[];
  signature: string;
  key_id: string;
}

/** True for a body in the shape of a refund answer (the fields an agent acts on). */
export function isRefundAnswer(value: unknown): value is RefundAnswer {
  return (
    isJsonObject(value) &&
    typeof value.request_id === 'string' &&
    typeof value.effect_id === 'string' &&
    typeof value.status === 'string' &&
    typeof value.why === 'string' &&
    (value.refund === null || typeof value.refund === 'string') &&
    Array.isArray(value.changes) &&
    Array.isArray(value.repairs) &&
    typeof value.receipt === 'string'
  );
}

/** True for a body in the shape of a signed receipt. */
export function isReceipt(value: unknown): value is Receipt {
  return (
    isJsonObject(value) &&
    (value.v === undefined || typeof value.v === 'number') &&
    typeof value.effect_id === 'string' &&
    Array.isArray(value.entries) &&
    value.entries.every(isJsonObject) &&
    typeof value.signature === 'string' &&
    typeof value.key_id === 'string'
  );
}
