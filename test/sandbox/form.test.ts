import Stripe from 'stripe';
import { describe, expect, it } from 'vitest';
import { canonicalParams, parseForm } from '../../server/sandbox/form.ts';
import { signatureHeader } from '../../server/sandbox/index.ts';

describe('sandbox form decoding, as Stripe reads request bodies', () => {
  it.each([
    ['plain pairs', 'amount=100&currency=usd', { amount: '100', currency: 'usd' }],
    ['nested metadata', 'metadata[effect_id]=e1&metadata[note]=a+b', { metadata: { effect_id: 'e1', note: 'a b' } }],
    ['indexed arrays', 'expand[0]=charge&expand[1]=payment_intent', { expand: ['charge', 'payment_intent'] }],
    ['empty-bracket arrays', 'expand[]=charge&expand[]=x', { expand: ['charge', 'x'] }],
    ['encoded brackets and values', 'metadata%5Bk%5D=%E2%82%AC%26', { metadata: { k: '€&' } }],
    [
      'what the SDK sends for a refund',
      'payment_intent=pi_1&metadata[effect_id]=e%201',
      { payment_intent: 'pi_1', metadata: { effect_id: 'e 1' } },
    ],
    ['an empty body', '', {}],
  ])('parseForm: %s', (_name, text, params) => {
    expect(parseForm(text)).toEqual({ ok: true, params });
  });

  it.each([
    ['a string and an object under one name', 'metadata=x&metadata[a]=1'],
    ['a key touching the prototype', '__proto__[polluted]=1'],
    ['nesting deeper than allowed', 'a[b][c][d][e][f]=1'],
    ['a malformed escape', 'amount=%E0%A4%A'],
    ['an unbalanced bracket', 'metadata[a=1'],
  ])('parseForm refuses %s', (_name, text) => {
    expect(parseForm(text).ok).toBe(false);
    expect(Object.prototype).not.toHaveProperty('polluted');
  });

  it('canonicalParams: the same parameters in another order have one fingerprint', () => {
    const a = parseForm('amount=1&metadata[x]=1&metadata[y]=2');
    const b = parseForm('metadata[y]=2&metadata[x]=1&amount=1');
    const c = parseForm('metadata[y]=2&metadata[x]=1&amount=2');
    if (!a.ok || !b.ok || !c.ok) throw new Error('fixtures must parse');
    expect(canonicalParams(a.params)).toBe(canonicalParams(b.params));
    expect(canonicalParams(a.params)).not.toBe(canonicalParams(c.params));
  });

  it("signatureHeader matches the SDK's own test signer byte for byte", () => {
    const payload = JSON.stringify({ id: 'evt_1', object: 'event' }, null, 2);
    const secret = 'whsec_compare';
    const timestamp = 1_767_225_600;
    expect(signatureHeader(payload, secret, timestamp)).toBe(
      Stripe.webhooks.generateTestHeaderString({ payload, secret, timestamp }),
    );
  });
});
