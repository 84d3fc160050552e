/**
 * The typed client of Interlock's agents' API (docs/agents/http-api.md), for Node and browsers alike: `fetch`,
 * the clock and sleeping are injected, and nothing here imports a Node module.
 */
export { isRefundAnswer, type Receipt, type RefundResult, type WaitResult, waitingForOf } from './answers.ts';
export { WAITING_FOR, type WaitingFor } from '../statuses.ts';
export { CALLBACK_REFUSALS, type CallbackRefusal, CallbackVerificationError, type VerifyCallbackOptions, verifyCallback } from './callbacks.ts';
export { type CallOptions, createInterlockClient, type InterlockClient, type InterlockClientOptions, type WaitOptions, type WaitProgress } from './client.ts';
export {
  AbortedError,
  CLIENT_ERROR_CODES,
  type ClientErrorCode,
  ConflictingPayloadError,
  type InterlockClientError,
  InterlockError,
  isInterlockClientError,
  NetworkError,
  TimeoutError,
  UnexpectedResponseError,
} from './errors.ts';
export { jitteredDelayMs, nextDelayMs, parseRetryAfterMs, pollLimits, sleepMsBeforeNextPoll } from './polling.ts';
export type { VerifyReport } from './receipts.ts';
