import type { DecisionBody, LoginBody, RefundRequestBody } from '../../shared/api.ts';
import { DECISION_ACTIONS } from '../../shared/api.ts';
import { isJsonObject } from '../../shared/json.ts';
import { limits } from '../../shared/limits.ts';
import { AppError } from './errors.ts';

const REQUEST_ID = /^[A-Za-z0-9._:/-]{1,200}$/;
const PAYMENT_INTENT = /^pi_[A-Za-z0-9_]{1,100}$/;
const FLAG = /^[a-z0-9_-]{1,64}$/;
const HASH = /^[0-9a-f]{64}$/;
const EFFECT_ID = /^[0-9a-f]{12}$/;

function fail(field: string, message: string): never {
  throw new AppError('validation_failed', `${field}: ${message}`);
}

/** Refuse any field the contract does not name, so a typo never silently changes a refund. */
function onlyKnownFields(body: Record<string, unknown>, known: readonly string[]): void {
  for (const key of Object.keys(body)) if (!known.includes(key)) fail(key, 'unknown field');
}

/** Parse and check `POST /v1/refunds`; every refusal names the field. */
export function parseRefundBody(body: unknown): RefundRequestBody {
  if (!isJsonObject(body)) fail('body', 'must be a JSON object');
  onlyKnownFields(body, ['request_id', 'payment_intent', 'amount', 'reason', 'flags']);
  const { request_id, payment_intent, amount, reason, flags } = body;
  if (typeof request_id !== 'string' || !REQUEST_ID.test(request_id)) fail('request_id', '1 to 200 characters of A-Z a-z 0-9 . _ : / -');
  if (typeof payment_intent !== 'string' || !PAYMENT_INTENT.test(payment_intent)) fail('payment_intent', 'must be a Stripe payment intent id (pi_...)');
  if (typeof amount !== 'number' || !Number.isSafeInteger(amount) || amount <= 0 || amount > limits.refundCentsMax) {
    fail('amount', `must be a whole number of cents from 1 to ${limits.refundCentsMax}`);
  }
  if (reason !== undefined && (typeof reason !== 'string' || reason.length > limits.reasonCharsMax || /\p{Cs}/u.test(reason))) {
    fail('reason', `must be well-formed text of at most ${limits.reasonCharsMax} characters`);
  }
  if (flags !== undefined) {
    if (!Array.isArray(flags) || flags.length > limits.flagsMax) fail('flags', `must be a list of at most ${limits.flagsMax} flags`);
    flags.forEach((flag, i) => {
      if (typeof flag !== 'string' || !FLAG.test(flag)) fail(`flags[${i}]`, 'lowercase letters, digits, _ and -, at most 64');
    });
  }
  return {
    request_id,
    payment_intent,
    amount,
    ...(reason === undefined ? {} : { reason }),
    ...(flags === undefined ? {} : { flags: [...new Set(flags.filter((flag): flag is string => typeof flag === 'string'))].sort() }),
  };
}

/** Parse a decision body. */
export function parseDecisionBody(body: unknown): DecisionBody {
  if (!isJsonObject(body)) fail('body', 'must be a JSON object');
  onlyKnownFields(body, ['action', 'escalation', 'repair_index']);
  const { action, escalation, repair_index } = body;
  const known = DECISION_ACTIONS.find((a) => a === action);
  if (known === undefined) fail('action', `one of ${DECISION_ACTIONS.join(', ')}`);
  if (typeof escalation !== 'string' || !HASH.test(escalation)) fail('escalation', 'the hash of the escalation you decide');
  if (known !== 'repair') {
    if (repair_index !== undefined) fail('repair_index', 'only for action repair');
    return { action: known, escalation };
  }
  if (typeof repair_index !== 'number' || !Number.isSafeInteger(repair_index) || repair_index < 0) fail('repair_index', 'which repair to accept, from 0');
  return { action: known, escalation, repair_index };
}

/** A person's name is short, and scrypt is never asked to hash an unbounded password. */
const LOGIN_NAME_CHARS_MAX = 64;
const LOGIN_PASSWORD_CHARS_MAX = 1024;

/** Parse a login body; a refusal names the field, never the value typed. */
export function parseLoginBody(body: unknown): LoginBody {
  if (!isJsonObject(body)) fail('body', 'must be a JSON object');
  onlyKnownFields(body, ['name', 'password']);
  const { name, password } = body;
  if (typeof name !== 'string' || name.length > LOGIN_NAME_CHARS_MAX) fail('name', `text of at most ${LOGIN_NAME_CHARS_MAX} characters`);
  if (typeof password !== 'string' || password.length > LOGIN_PASSWORD_CHARS_MAX) fail('password', `text of at most ${LOGIN_PASSWORD_CHARS_MAX} characters`);
  return { name, password };
}

/** Parse `POST /api/test/clock`: how far to move the application clock. */
export function parseClockBody(body: unknown): { advance_ms: number } {
  if (!isJsonObject(body)) fail('body', 'must be a JSON object');
  onlyKnownFields(body, ['advance_ms']);
  const { advance_ms } = body;
  if (typeof advance_ms !== 'number' || !Number.isSafeInteger(advance_ms) || advance_ms < 0) fail('advance_ms', 'a whole number of ms, 0 or more');
  return { advance_ms };
}

/** Check a path's effect id. */
export function parseEffectId(value: string): string {
  if (!EFFECT_ID.test(value)) throw new AppError('not_found', 'no such item');
  return value;
}

/** Check a path's request id. */
export function parseRequestId(value: string): string {
  if (!REQUEST_ID.test(value)) fail('request_id', '1 to 200 characters of A-Z a-z 0-9 . _ : / -');
  return value;
}
