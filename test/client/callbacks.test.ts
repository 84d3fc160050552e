import { createHmac } from 'node:crypto';
import Stripe from 'stripe';
import { describe, expect, it } from 'vitest';
import { signBody } from '../../server/outbox/signing.ts';
import { CallbackVerificationError, type CallbackRefusal, verifyCallback } from '../../shared/client/index.ts';

const SECRET = 'support-bot-callback-secret-0123';
const NOW_MS = 1_800_000_000_000;
const NOW_S = NOW_MS / 1000;

/** A callback body as the server sends it: the JSON of GET /v1/refunds/:request_id. */
const BODY = JSON.stringify({
  request_id: 'case-4471',
  effect_id: '3f2a9c1d7e4b',
  status: 'COMMITTED',
  why: 'the refund was sent to Stripe once',
  refund: 're_123',
  changes: [],
  repairs: [],
  receipt: '/v1/receipts/3f2a9c1d7e4b',
});

async function refusal(verify: Promise<unknown>): Promise<CallbackRefusal> {
  try {
    await verify;
  } catch (error) {
    if (error instanceof CallbackVerificationError) return error.reason;
    throw error;
  }
  throw new Error('expected a CallbackVerificationError, but the callback verified');
}

describe('verifyCallback', () => {
  it('returns the refund answer when the signature is the server’s, within the tolerance', async () => {
    const header = signBody(BODY, SECRET, NOW_S - 10);
    const answer = await verifyCallback(BODY, header, SECRET, { nowMs: NOW_MS });
    expect(answer).toMatchObject({ request_id: 'case-4471', status: 'COMMITTED', refund: 're_123' });
  });

  it('signs exactly as Stripe does: HMAC-SHA256 of "t.body" in hex, which Stripe’s own SDK verifies', () => {
    const header = signBody(BODY, SECRET, NOW_S);
    const expected = createHmac('sha256', SECRET).update(`${NOW_S}.${BODY}`).digest('hex');
    expect(header).toBe(`t=${NOW_S},v1=${expected}`);
    // The Stripe SDK's webhook verifier checks against the real clock.
    const wallS = Math.floor(Date.now() / 1000);
    const event = new Stripe('sk_test_unused').webhooks.constructEvent(BODY, signBody(BODY, SECRET, wallS), SECRET);
    expect(event).toMatchObject({ request_id: 'case-4471' });
  });

  it('accepts any one matching v1 among several, as during a secret rotation', async () => {
    const good = signBody(BODY, SECRET, NOW_S).split(',')[1]!;
    const old = signBody(BODY, 'an-older-secret-0123456789', NOW_S).split(',')[1]!;
    await expect(verifyCallback(BODY, `t=${NOW_S},${old},${good}`, SECRET, { nowMs: NOW_MS })).resolves.toMatchObject({ effect_id: '3f2a9c1d7e4b' });
  });

  const REFUSALS: [string, () => Promise<unknown>, CallbackRefusal][] = [
    ['a changed body', () => verifyCallback(BODY.replace('COMMITTED', 'REFUSED'), signBody(BODY, SECRET, NOW_S), SECRET, { nowMs: NOW_MS }), 'bad_signature'],
    ['another secret', () => verifyCallback(BODY, signBody(BODY, 'not-the-agents-secret-0123', NOW_S), SECRET, { nowMs: NOW_MS }), 'bad_signature'],
    ['a v1 that is not hex', () => verifyCallback(BODY, `t=${NOW_S},v1=zz`, SECRET, { nowMs: NOW_MS }), 'bad_signature'],
    ['a changed timestamp', () => verifyCallback(BODY, signBody(BODY, SECRET, NOW_S).replace(`t=${NOW_S}`, `t=${NOW_S + 1}`), SECRET, { nowMs: NOW_MS }), 'bad_signature'],
    ['no header', () => verifyCallback(BODY, null, SECRET, { nowMs: NOW_MS }), 'malformed_header'],
    ['an empty header', () => verifyCallback(BODY, '', SECRET, { nowMs: NOW_MS }), 'malformed_header'],
    ['a header with no t', () => verifyCallback(BODY, signBody(BODY, SECRET, NOW_S).split(',')[1]!, SECRET, { nowMs: NOW_MS }), 'malformed_header'],
    ['a header with no v1', () => verifyCallback(BODY, `t=${NOW_S},v0=abc`, SECRET, { nowMs: NOW_MS }), 'malformed_header'],
    ['a t that is not a number', () => verifyCallback(BODY, 't=yesterday,v1=00', SECRET, { nowMs: NOW_MS }), 'malformed_header'],
    ['a signature 301 s old', () => verifyCallback(BODY, signBody(BODY, SECRET, NOW_S - 301), SECRET, { nowMs: NOW_MS }), 'timestamp_too_old'],
    ['a signature 301 s ahead', () => verifyCallback(BODY, signBody(BODY, SECRET, NOW_S + 301), SECRET, { nowMs: NOW_MS }), 'timestamp_too_new'],
    ['a signature 61 s old under a 60 s tolerance', () => verifyCallback(BODY, signBody(BODY, SECRET, NOW_S - 61), SECRET, { nowMs: NOW_MS, toleranceS: 60 }), 'timestamp_too_old'],
    ['a signed body that is not JSON', () => verifyCallback('not json', signBody('not json', SECRET, NOW_S), SECRET, { nowMs: NOW_MS }), 'bad_body'],
    ['a signed body that is not a refund answer', () => verifyCallback('{"ok":true}', signBody('{"ok":true}', SECRET, NOW_S), SECRET, { nowMs: NOW_MS }), 'bad_body'],
  ];

  it.each(REFUSALS)('refuses %s', async (_what, verify, reason) => {
    expect(await refusal(verify())).toBe(reason);
  });

  it('accepts a signature exactly at the tolerance in either direction', async () => {
    await expect(verifyCallback(BODY, signBody(BODY, SECRET, NOW_S - 300), SECRET, { nowMs: NOW_MS })).resolves.toBeDefined();
    await expect(verifyCallback(BODY, signBody(BODY, SECRET, NOW_S + 300), SECRET, { nowMs: NOW_MS })).resolves.toBeDefined();
  });

  it('says why in a fixed sentence with a stable code, never the secret or the body', async () => {
    const error = await verifyCallback(BODY, signBody(BODY, 'not-the-agents-secret-0123', NOW_S), SECRET, { nowMs: NOW_MS }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CallbackVerificationError);
    expect(error).toMatchObject({ code: 'callback_unverified', reason: 'bad_signature', message: 'no v1 signature matches the body for this secret' });
  });

  it('refuses to run without a secret or with a tolerance that is no window', async () => {
    await expect(verifyCallback(BODY, signBody(BODY, SECRET, NOW_S), '', { nowMs: NOW_MS })).rejects.toThrow(TypeError);
    await expect(verifyCallback(BODY, signBody(BODY, SECRET, NOW_S), SECRET, { nowMs: NOW_MS, toleranceS: 0 })).rejects.toThrow(TypeError);
  });
});
