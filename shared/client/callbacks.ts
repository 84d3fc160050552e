import type { RefundAnswer } from '../api.ts';
import { isRefundAnswer } from './answers.ts';

/**
 * Checking Interlock's callbacks on the agent's side. A callback is a POST of the same JSON as
 * `GET /v1/refunds/:request_id`, with `Interlock-Signature: t=<unix seconds>,v1=<hex>`: Stripe's
 * webhook scheme, the HMAC-SHA256 of `<t>.<raw body>` keyed with the agent's callback secret.
 * WebCrypto only, so it runs in Node and browsers alike.
 */

/** Why a callback was not accepted. */
export const CALLBACK_REFUSALS = ['malformed_header', 'bad_signature', 'timestamp_too_old', 'timestamp_too_new', 'bad_body'] as const;
/** One reason a callback was not accepted. */
export type CallbackRefusal = (typeof CALLBACK_REFUSALS)[number];

// Fixed sentences, free of the header, body and secret, so they can be logged as they are.
const REFUSAL_MESSAGES: Readonly<Record<CallbackRefusal, string>> = {
  malformed_header: 'the Interlock-Signature header is missing or is not t=<unix seconds>,v1=<hex signature>',
  bad_signature: 'no v1 signature matches the body for this secret',
  timestamp_too_old: 'the signature is older than the tolerance allows: a replay, or a clock far behind',
  timestamp_too_new: 'the signature is from further in the future than the tolerance allows: a clock far ahead',
  bad_body: 'the signed body is not a refund answer (the JSON of GET /v1/refunds/:request_id)',
};

/** A callback that must not be trusted; `reason` says why, in a stable word. */
export class CallbackVerificationError extends Error {
  readonly code = 'callback_unverified';

  constructor(readonly reason: CallbackRefusal) {
    super(REFUSAL_MESSAGES[reason]);
    this.name = 'CallbackVerificationError';
  }
}

/** How far a callback's timestamp may be from now; Stripe's default tolerance is the same 300 s. */
export interface VerifyCallbackOptions {
  toleranceS?: number;
  /** The receiver's clock, ms (default `Date.now()`). */
  nowMs?: number;
}

const DEFAULT_TOLERANCE_S = 300;
/** A header is a few hundred characters; a huge one is not ours and is not parsed. */
const HEADER_CHARS_MAX = 4096;

/** The `t` and every `v1` of a header (several during a secret rotation), or null when it is malformed. */
function parseHeader(header: string | null): { timestampS: number; candidates: string[] } | null {
  if (typeof header !== 'string' || header.length === 0 || header.length > HEADER_CHARS_MAX) return null;
  let timestamp: string | null = null;
  const candidates: string[] = [];
  for (const part of header.split(',')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    const key = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    if (key === 't') timestamp = value;
    else if (key === 'v1') candidates.push(value);
  }
  if (timestamp === null || !/^\d{1,15}$/.test(timestamp) || candidates.length === 0) return null;
  return { timestampS: Number(timestamp), candidates };
}

/** Hex to bytes; null for anything that is not 64 hex digits (the length of a SHA-256 HMAC). */
function signatureBytes(hex: string): Uint8Array<ArrayBuffer> | null {
  if (!/^[0-9a-fA-F]{64}$/.test(hex)) return null;
  const bytes = new Uint8Array(32);
  for (let i = 0; i < 32; i++) bytes[i] = Number.parseInt(hex.slice(i * 2, i * 2 + 2), 16);
  return bytes;
}

function subtleCrypto(): SubtleCrypto {
  const found = globalThis.crypto?.subtle;
  if (found === undefined) throw new Error('verifying a callback needs WebCrypto (crypto.subtle), which a browser offers only over https or on localhost');
  return found;
}

/** True when any candidate is the HMAC of `signed`; WebCrypto's verify compares in constant time. */
async function anySignatureMatches(secret: string, signed: string, candidates: readonly string[]): Promise<boolean> {
  const subtle = subtleCrypto();
  const encoder = new TextEncoder();
  const key = await subtle.importKey('raw', encoder.encode(secret), { name: 'HMAC', hash: 'SHA-256' }, false, ['verify']);
  const data = encoder.encode(signed);
  let matched = false;
  for (const candidate of candidates) {
    const bytes = signatureBytes(candidate);
    // Every candidate is checked, so the time taken does not say which one matched.
    if (bytes !== null && (await subtle.verify('HMAC', key, bytes, data))) matched = true;
  }
  return matched;
}

/**
 * Verify an Interlock callback and return its body, the refund's answer. `rawBody` must be the
 * body exactly as received (before any JSON parsing); every `v1` in the header is tried. Throws
 * `CallbackVerificationError` (malformed header, bad signature, too old or too new, not a refund
 * answer). Any Stripe webhook verifier checks the same header with the same secret.
 */
export async function verifyCallback(
  rawBody: string,
  signatureHeader: string | null,
  secret: string,
  { toleranceS = DEFAULT_TOLERANCE_S, nowMs = Date.now() }: VerifyCallbackOptions = {},
): Promise<RefundAnswer> {
  if (typeof secret !== 'string' || secret.length === 0) throw new TypeError('verifyCallback needs the callback secret');
  if (!Number.isFinite(toleranceS) || toleranceS <= 0) throw new TypeError('toleranceS must be a positive number of seconds');
  if (typeof rawBody !== 'string') throw new TypeError('verifyCallback needs the raw body as a string, exactly as received');
  const header = parseHeader(signatureHeader);
  if (header === null) throw new CallbackVerificationError('malformed_header');
  if (!(await anySignatureMatches(secret, `${header.timestampS}.${rawBody}`, header.candidates))) throw new CallbackVerificationError('bad_signature');
  const ageS = nowMs / 1000 - header.timestampS;
  if (ageS > toleranceS) throw new CallbackVerificationError('timestamp_too_old');
  if (ageS < -toleranceS) throw new CallbackVerificationError('timestamp_too_new');
  let body: unknown;
  try {
    body = JSON.parse(rawBody);
  } catch {
    throw new CallbackVerificationError('bad_body');
  }
  if (!isRefundAnswer(body)) throw new CallbackVerificationError('bad_body');
  return body;
}
