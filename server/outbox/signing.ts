import { createHmac } from 'node:crypto';

/** Carries a message's id on every attempt, so a receiver can drop a repeat. */
export const MESSAGE_ID_HEADER = 'Interlock-Message-Id';

/** Carries a webhook's or callback's signature: `t=<unix seconds>,v1=<hex HMAC-SHA256>`. */
export const SIGNATURE_HEADER = 'Interlock-Signature';

/**
 * The `Interlock-Signature` value for a body: Stripe's webhook scheme exactly (the HMAC-SHA256,
 * keyed with `secret`, of `<t>.<body>`, in hex), so any Stripe webhook verifier given our header
 * and the agent's secret checks it. The timestamp is in the signed text, so a captured request
 * cannot be replayed outside the receiver's tolerance.
 */
export function signBody(body: string, secret: string, timestampS: number): string {
  if (!Number.isSafeInteger(timestampS) || timestampS < 0) throw new RangeError('a signature timestamp is a whole number of unix seconds');
  const v1 = createHmac('sha256', Buffer.from(secret, 'utf8')).update(`${timestampS}.${body}`, 'utf8').digest('hex');
  return `t=${timestampS},v1=${v1}`;
}
