import { StoreBusyError, StoreClosedError } from '../../db/port/errors.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyReceipt } from '../../server/receipts/verify.ts';
import { type AppWorld, buildAppWorld } from '../support/app-world.ts';

let world: AppWorld;
beforeAll(async () => {
  world = await buildAppWorld();
});
afterAll(async () => world.close());

describe('agents API', () => {
  it('a routine refund clears with no person and a retry changes nothing', async () => {
    const pi = await world.payment(10_000);
    const body = { request_id: 'case-1', payment_intent: pi, amount: 2_000, reason: 'cracked jar' };
    const first = await world.agent('POST', '/v1/refunds', body);
    expect(first.statusCode).toBe(200);
    expect(first.json()).toMatchObject({ request_id: 'case-1', status: 'COMMITTED', changes: [], repairs: [] });
    expect(first.json().refund).toMatch(/^re_/);
    const count = await world.entryCount();
    const again = await world.agent('POST', '/v1/refunds', body);
    expect(again.json()).toMatchObject({ status: 'DUPLICATE_IGNORED', refund: first.json().refund });
    expect(await world.entryCount()).toBe(count);
    expect(world.sandbox.refunds(pi)).toHaveLength(1);
    const current = await world.agent('GET', '/v1/refunds/case-1');
    expect(current.json()).toMatchObject({ status: 'COMMITTED', effect_id: first.json().effect_id });
  });

  it('an over-limit refund is queued for a person with the failed rule named', async () => {
    const pi = await world.payment(10_000);
    const response = await world.agent('POST', '/v1/refunds', { request_id: 'case-2', payment_intent: pi, amount: 8_000 });
    expect(response.statusCode).toBe(202);
    expect(response.json()).toMatchObject({ status: 'QUEUED', refund: null });
    expect(response.json().why).toMatch(/approver must decide/);
    expect(world.sandbox.refunds(pi)).toEqual([]);
  });

  it('receipts are signed as v2, verify offline as served, and the public key is served', async () => {
    const pi = await world.payment(10_000);
    const posted = (await world.agent('POST', '/v1/refunds', { request_id: 'case-3', payment_intent: pi, amount: 1_000 })).json();
    const receipt = await world.agent('GET', posted.receipt);
    expect(receipt.json()).toMatchObject({ v: 2, effect_id: posted.effect_id, key_id: world.services.signingKey.keyId });
    // The answer's schema writes only the fields it lists: a v left out would fail the signature here.
    expect(await verifyReceipt(receipt.json(), world.services.signingKey.publicKeyPem)).toMatchObject({ valid: true, signed: true });
    const report = (await world.agent('GET', `${posted.receipt}/verify`)).json();
    expect(report).toMatchObject({ valid: true, signed: true, happened: true, happened_once: true, authorized_when_fired: true, assumptions_held: true });
    const keys = await world.app.inject({ method: 'GET', url: '/.well-known/interlock-keys' });
    expect(keys.json().keys[0]).toMatchObject({ key_id: world.services.signingKey.keyId, alg: 'Ed25519' });
  });

  it.each([
    ['no token', undefined, 401, 'unauthorized'],
    ['a wrong token', 'sk_agent_wrong_token', 401, 'unauthorized'],
  ])('%s is refused and writes nothing', async (_name, token, status, code) => {
    const before = await world.entryCount();
    const response = await world.app.inject({
      method: 'POST',
      url: '/v1/refunds',
      headers: token ? { authorization: `Bearer ${token}` } : {},
      payload: { request_id: 'x', payment_intent: 'pi_x', amount: 1 },
    });
    expect(response.statusCode).toBe(status);
    expect(response.json()).toEqual({ error: { code, message: expect.any(String) } });
    expect(await world.entryCount()).toBe(before);
  });

  it.each([
    ['an unknown field', { request_id: 'v1', payment_intent: 'pi_abc', amount: 100, note: 'x' }, 'note'],
    ['a fractional amount', { request_id: 'v2', payment_intent: 'pi_abc', amount: 10.5 }, 'amount'],
    ['a zero amount', { request_id: 'v3', payment_intent: 'pi_abc', amount: 0 }, 'amount'],
    ['a string amount', { request_id: 'v4', payment_intent: 'pi_abc', amount: '100' }, 'amount'],
    ['a bad request id', { request_id: 'no spaces', payment_intent: 'pi_abc', amount: 100 }, 'request_id'],
    ['a bad payment intent', { request_id: 'v5', payment_intent: 'ch_abc', amount: 100 }, 'payment_intent'],
    ['bad flags', { request_id: 'v6', payment_intent: 'pi_abc', amount: 100, flags: ['VIP!'] }, 'flags[0]'],
    ['an array body', [1, 2], 'body'],
    ['a reason with a broken character', { request_id: 'v7', payment_intent: 'pi_abc', amount: 100, reason: 'ok \ud800' }, 'reason'],
  ])('%s is validation_failed naming the field, and writes nothing', async (_name, body, field) => {
    const before = await world.entryCount();
    const response = await world.agent('POST', '/v1/refunds', body);
    expect(response.statusCode).toBe(400);
    expect(response.json().error.code).toBe('validation_failed');
    expect(response.json().error.message.startsWith(`${field}:`)).toBe(true);
    expect(await world.entryCount()).toBe(before);
  });

  it.each([
    ['101 characters', `case-${'a'.repeat(96)}`],
    ['200 characters with / and :', `case:4471/${'x'.repeat(180)}/a:b/c`.padEnd(200, 'z')],
  ])('a request id of %s is taken by POST and read back by GET, percent-encoded', async (_name, requestId) => {
    const pi = await world.payment(10_000);
    const posted = await world.agent('POST', '/v1/refunds', { request_id: requestId, payment_intent: pi, amount: 1_000 });
    expect([posted.statusCode, posted.json().request_id]).toEqual([200, requestId]);
    const read = await world.agent('GET', `/v1/refunds/${encodeURIComponent(requestId)}`);
    expect([read.statusCode, read.json().request_id, read.json().effect_id]).toEqual([200, requestId, posted.json().effect_id]);
  });

  it('a request id one past the longest is validation_failed naming request_id, in a body or a path', async () => {
    const tooLong = `case:4471/${'x'.repeat(200)}`.slice(0, 201);
    const posted = await world.agent('POST', '/v1/refunds', { request_id: tooLong, payment_intent: 'pi_abc', amount: 100 });
    expect([posted.statusCode, posted.json().error.message.startsWith('request_id: ')]).toEqual([400, true]);
    const read = await world.agent('GET', `/v1/refunds/${encodeURIComponent(tooLong)}`);
    expect([read.statusCode, read.json().error.code, read.json().error.message.startsWith('request_id: ')]).toEqual([400, 'validation_failed', true]);
  });

  it('bad JSON and an oversized body get stable codes and write nothing', async () => {
    const before = await world.entryCount();
    const bad = await world.app.inject({ method: 'POST', url: '/v1/refunds', headers: { authorization: 'Bearer sk_agent_demo_support_bot', 'content-type': 'application/json' }, payload: '{"request_id":' });
    expect([bad.statusCode, bad.json().error.code]).toEqual([400, 'validation_failed']);
    const big = await world.agent('POST', '/v1/refunds', { request_id: 'big', payment_intent: 'pi_abc', amount: 1, reason: 'x'.repeat(40_000) });
    expect([big.statusCode, big.json().error.code]).toEqual([413, 'payload_too_large']);
    expect(await world.entryCount()).toBe(before);
  });

  it('an unknown payment intent is refused before anything is written', async () => {
    const before = await world.entryCount();
    const response = await world.agent('POST', '/v1/refunds', { request_id: 'ghost', payment_intent: 'pi_doesnotexist', amount: 100 });
    expect(response.statusCode).toBe(400);
    expect(response.json().error.message).toBe('payment_intent: Stripe knows no such payment intent');
    expect(await world.entryCount()).toBe(before);
  });

  it('another agent cannot read a request or its receipt', async () => {
    const response = await world.agent('GET', '/v1/refunds/case-1', undefined, 'sk_agent_nobody_here');
    expect(response.statusCode).toBe(401);
    expect((await world.agent('GET', '/v1/refunds/never-made')).statusCode).toBe(404);
  });

  it('health answers without touching anything; readiness says ready', async () => {
    expect((await world.app.inject({ method: 'GET', url: '/healthz', headers: { host: 'anything.example' } })).json()).toMatchObject({ ok: true });
    expect((await world.app.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);
  });

  it('a 500 never carries exception text', async () => {
    // A request's answer reads its chain with its seals.
    const original = world.services.journal.sealedChain.bind(world.services.journal);
    world.services.journal.sealedChain = async () => {
      throw new Error('SQLITE_CORRUPT: secret table details');
    };
    try {
      const response = await world.agent('GET', '/v1/refunds/case-1');
      expect(response.statusCode).toBe(500);
      expect(response.json().error.code).toBe('internal_error');
      expect(response.body).not.toMatch(/SQLITE|secret/);
    } finally {
      world.services.journal.sealedChain = original;
    }
  });

  it.each([
    ['held by another process past the wait', () => new StoreBusyError('database is locked'), /held by another process/],
    ['closed as the server stops', () => new StoreClosedError('the storage is closed'), /stopping/],
  ])('a journal %s is answered 503 not_ready with Retry-After, never 500', async (_why, error, said) => {
    const original = world.services.journal.sealedChain.bind(world.services.journal);
    world.services.journal.sealedChain = async () => {
      throw error();
    };
    try {
      const response = await world.agent('GET', '/v1/refunds/case-1');
      expect({ status: response.statusCode, retryAfter: response.headers['retry-after'], code: response.json().error.code }).toEqual({ status: 503, retryAfter: '1', code: 'not_ready' });
      expect(response.json().error.message).toMatch(said);
    } finally {
      world.services.journal.sealedChain = original;
    }
  });
});
