import { createHmac, timingSafeEqual } from 'node:crypto';
import Stripe from 'stripe';
import { isJsonObject, type JsonObject } from '../../shared/json.ts';
import { limits } from '../../shared/limits.ts';

/** Why a webhook request is not trusted (core §8.1). Each has one fixed message. */
export const WEBHOOK_REFUSALS = ['unsigned', 'stale_timestamp', 'bad_signature', 'live_mode', 'test_mode', 'api_version', 'not_raw_bytes', 'bad_json'] as const;
/** One reason a webhook request was refused. */
export type WebhookRefusal = (typeof WEBHOOK_REFUSALS)[number];

// Fixed sentences: an error text must never carry the secret, the header, the body, a refund id
// or a timestamp, because error texts end up in logs and in answers to whoever sent the request.
const REFUSAL_MESSAGES: Readonly<Record<WebhookRefusal, string>> = {
  unsigned: 'the request carries no usable Stripe signature',
  stale_timestamp: 'the signature timestamp is outside the tolerance window',
  bad_signature: 'no signature matches the body for any configured endpoint secret',
  live_mode: 'only test-mode events are accepted',
  test_mode: 'only live-mode events are accepted in live mode',
  api_version: `the event's API version is not ${Stripe.API_VERSION}, the one Interlock's Stripe SDK reads; set the webhook endpoint's API version to it`,
  not_raw_bytes: 'the body must be verified as the raw bytes received',
  bad_json: 'the signed body is not a JSON object',
};

/** The request is not trustworthy; `reason` is stable, the message fixed and free of request data. */
export class WebhookError extends Error {
  override readonly name = 'WebhookError';
  readonly code = 'signature_invalid';

  constructor(readonly reason: WebhookRefusal) {
    super(REFUSAL_MESSAGES[reason]);
  }
}

/** The endpoint is misconfigured (a secret without `whsec_`, no secret, a tolerance that disables replay protection). */
export class WebhookConfigError extends Error {
  override readonly name = 'WebhookConfigError';
  readonly code = 'webhook_misconfigured';
}

/** A verified event: a JSON object whose `livemode` is exactly the server's mode. Other fields are unchecked. */
export type StripeEventLike = JsonObject & { livemode: boolean };

const SECRET_PREFIX = 'whsec_';
const SIGNATURE_SCHEME = 'v1';

/**
 * Refuse a configuration that could not verify anything or would switch replay protection off.
 * Thrown as a configuration error, never as a webhook error: it is our mistake, not the sender's.
 */
export function assertWebhookConfig(secrets: readonly string[], toleranceMs: number = limits.webhookToleranceMs): void {
  if (!Array.isArray(secrets) || secrets.length === 0) throw new WebhookConfigError('at least one webhook endpoint secret is required');
  for (const secret of secrets) {
    if (typeof secret !== 'string' || !secret.startsWith(SECRET_PREFIX) || secret.length === SECRET_PREFIX.length) {
      throw new WebhookConfigError(`every webhook endpoint secret must start with ${SECRET_PREFIX}`);
    }
  }
  if (typeof toleranceMs !== 'number' || !Number.isFinite(toleranceMs) || toleranceMs <= 0) {
    throw new WebhookConfigError('the webhook tolerance must be a positive number of ms');
  }
}

/** The `t` and every `v1` of a `Stripe-Signature` header; other schemes (v0, ...) are ignored, so none can downgrade. */
interface ParsedHeader {
  timestamp: string | null;
  candidates: string[];
}

// The header is bounded by the HTTP server's header size limit, so this split is bounded too.
function parseHeader(header: string): ParsedHeader {
  const parsed: ParsedHeader = { timestamp: null, candidates: [] };
  for (const rawPart of header.split(',')) {
    const part = rawPart.trim();
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    const key = part.slice(0, eq);
    const value = part.slice(eq + 1);
    if (key === 't') parsed.timestamp = value;
    else if (key === SIGNATURE_SCHEME) parsed.candidates.push(value);
  }
  return parsed;
}

/** Unix seconds as an integer, or null. A sign is tolerated as Stripe's reference verifier does. */
function parseTimestamp(text: string): number | null {
  if (!/^[+-]?\d{1,16}$/.test(text.trim())) return null;
  const seconds = Number(text.trim());
  return Number.isSafeInteger(seconds) ? seconds : null;
}

function expectedSignature(secret: string, timestampSeconds: number, payload: Buffer): Buffer {
  // The timestamp is re-printed from the parsed integer, so "t=01800000000" signs "1800000000.".
  const hmac = createHmac('sha256', Buffer.from(secret, 'utf8'));
  hmac.update(`${timestampSeconds}.`, 'utf8');
  hmac.update(payload);
  return Buffer.from(hmac.digest('hex'), 'utf8');
}

/** True when any candidate equals any expected signature; each comparison is constant-time. */
function anySignatureMatches(expected: readonly Buffer[], candidates: readonly string[]): boolean {
  let matched = false;
  for (const candidate of candidates) {
    const bytes = Buffer.from(candidate, 'utf8');
    for (const wanted of expected) {
      // Lengths are public (64 hex digits); a candidate of another length can never match.
      if (bytes.length === wanted.length && timingSafeEqual(bytes, wanted)) matched = true;
    }
  }
  return matched;
}

function parseEvent(payload: Buffer, livemode: boolean): StripeEventLike {
  let event: unknown;
  try {
    event = JSON.parse(payload.toString('utf8'));
  } catch {
    throw new WebhookError('bad_json');
  }
  if (!isJsonObject(event)) throw new WebhookError('bad_json');
  const mode = event.livemode;
  if (typeof mode !== 'boolean' || mode !== livemode) throw new WebhookError(livemode ? 'test_mode' : 'live_mode');
  // Live money is confirmed only from events shaped as the SDK's types say: an endpoint on another
  // API version sends other shapes, so its events are refused (Stripe delivers them again for
  // three days, long enough to set the endpoint's version right) rather than misread.
  if (livemode && event.api_version !== Stripe.API_VERSION) throw new WebhookError('api_version');
  return { ...event, livemode: mode };
}

/**
 * Verify a Stripe webhook (core §8.1) and return its event. `payload` must be the raw bytes as
 * received; every `v1` is tried against every secret (several during a secret rotation); a
 * timestamp more than `toleranceMs` from `nowMs` is refused in both directions. Throws
 * `WebhookConfigError` for our misconfiguration and `WebhookError` for an untrusted request.
 */
export function verifyWebhook(
  payload: Buffer,
  header: string | undefined,
  secrets: readonly string[],
  nowMs: number,
  toleranceMs: number = limits.webhookToleranceMs,
  livemode = false,
): StripeEventLike {
  assertWebhookConfig(secrets, toleranceMs);
  // A decoded string (or a parsed object) has already lost the exact bytes Stripe signed.
  const view: unknown = payload;
  if (!(view instanceof Uint8Array)) throw new WebhookError('not_raw_bytes');
  const bytes = Buffer.from(view.buffer, view.byteOffset, view.byteLength);
  if (typeof header !== 'string' || header.length === 0) throw new WebhookError('unsigned');
  const parsed = parseHeader(header);
  const timestampSeconds = parsed.timestamp === null ? null : parseTimestamp(parsed.timestamp);
  if (timestampSeconds === null || parsed.candidates.length === 0) throw new WebhookError('unsigned');
  if (Math.abs(nowMs - timestampSeconds * 1000) > toleranceMs) throw new WebhookError('stale_timestamp');
  const expected = secrets.map((secret) => expectedSignature(secret, timestampSeconds, bytes));
  if (!anySignatureMatches(expected, parsed.candidates)) throw new WebhookError('bad_signature');
  return parseEvent(bytes, livemode);
}

/** The `Stripe-Signature` header for a body, as Stripe would send it: for tests and local tooling. */
export function signWebhook(payload: Buffer | string, secret: string, timestampSeconds: number): string {
  const bytes = typeof payload === 'string' ? Buffer.from(payload, 'utf8') : payload;
  return `t=${timestampSeconds},${SIGNATURE_SCHEME}=${expectedSignature(secret, timestampSeconds, bytes).toString('utf8')}`;
}
