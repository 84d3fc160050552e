import type Stripe from 'stripe';
import { describe, expect, it } from 'vitest';
import { rejectionOf, useSandbox } from './support.ts';

// Stripe's `expand[]`: a dotted path expands every field along it (`latest_charge.refunds` is the
// charge, then its refunds), at most four levels deep; a list's paths start with `data`; an
// expanded list holds its first 10 items with `has_more`, and the list endpoint pages on. A
// setting makes the sandbox ignore `expand`, as a Stripe that did would, so a caller's fallback
// reads can be tested.

/** The object an expanded field holds (fails the test when the field is still an id). */
function expanded<T extends { id: string }>(value: string | T | null | undefined): T {
  if (value === null || value === undefined || typeof value === 'string') throw new Error(`expected an expanded object, got ${String(value)}`);
  return value;
}

/** An expanded list (fails the test when it is absent). */
function listOf<T>(value: Stripe.ApiList<T> | null | undefined): Stripe.ApiList<T> {
  if (value === null || value === undefined) throw new Error('expected an expanded list');
  return value;
}

describe('sandbox expand, nested as Stripe expands it', () => {
  it('latest_charge.refunds: the payment’s charge with its refunds as a Stripe list, newest first, in one read', async () => {
    const sandbox = await useSandbox({ settle: 'manual' });
    const stripe = sandbox.stripe();
    const intent = await sandbox.createPaymentIntent(5_000);
    const ours = await stripe.refunds.create({ payment_intent: intent.id, amount: 700, metadata: { interlock_effect_id: 'e1' } });
    const byHand = sandbox.handRefund(intent.id, 300);
    const read: Stripe.PaymentIntent = await stripe.paymentIntents.retrieve(intent.id, { expand: ['latest_charge.refunds'] });
    const charge: Stripe.Charge = expanded(read.latest_charge);
    expect(charge).toMatchObject({ id: intent.latest_charge, object: 'charge', amount_refunded: 1_000, disputed: false });
    const refunds: Stripe.ApiList<Stripe.Refund> = listOf(charge.refunds);
    expect(refunds).toMatchObject({ object: 'list', has_more: false, url: `/v1/charges/${charge.id}/refunds` });
    expect(refunds.data.map((refund) => [refund.id, refund.metadata])).toEqual([
      [byHand.id, {}],
      [ours.id, { interlock_effect_id: 'e1' }],
    ]);
    // Inside, fields not named stay ids; a charge read without expanding its refunds has none, as Stripe's has not since 2022-11-15.
    expect(typeof refunds.data[0]!.charge).toBe('string');
    const plain = expanded((await stripe.paymentIntents.retrieve(intent.id, { expand: ['latest_charge'] })).latest_charge);
    expect(plain).not.toHaveProperty('refunds');
    expect(listOf((await stripe.charges.retrieve(charge.id, { expand: ['refunds'] })).refunds).data).toHaveLength(2);
  });

  it('an expanded list holds the first 10 refunds with has_more; GET /v1/refunds?charge=…&starting_after=… pages on', async () => {
    const sandbox = await useSandbox({ settle: 'manual' });
    const stripe = sandbox.stripe();
    const intent = await sandbox.createPaymentIntent(5_000);
    const ids = Array.from({ length: 12 }, () => sandbox.handRefund(intent.id, 100).id);
    const newestFirst = [...ids].reverse();
    const charge = expanded((await stripe.paymentIntents.retrieve(intent.id, { expand: ['latest_charge.refunds'] })).latest_charge);
    const first = listOf(charge.refunds);
    expect([first.data.length, first.has_more]).toEqual([10, true]);
    expect(first.data.map((refund) => refund.id)).toEqual(newestFirst.slice(0, 10));
    const rest = await stripe.refunds.list({ charge: charge.id, starting_after: first.data.at(-1)!.id });
    expect([rest.data.map((refund) => refund.id), rest.has_more]).toEqual([newestFirst.slice(10), false]);
    // The list's own url pages the same way.
    const byUrl = await fetch(`${sandbox.url}${first.url}?limit=3&starting_after=${first.data.at(-1)!.id}`, {
      headers: { authorization: `Bearer ${sandbox.apiKey}` },
    });
    const page = (await byUrl.json()) as Stripe.ApiList<Stripe.Refund>;
    expect([page.object, page.data.map((refund) => refund.id), page.has_more]).toEqual(['list', newestFirst.slice(10), false]);
    expect((await fetch(`${sandbox.url}/v1/charges/ch_missing/refunds`, { headers: { authorization: `Bearer ${sandbox.apiKey}` } })).status).toBe(404);
  });

  it('four levels deep at most: latest_charge.refunds.data.charge is expanded, a fifth level is refused in Stripe’s words', async () => {
    const sandbox = await useSandbox();
    const stripe = sandbox.stripe();
    const intent = await sandbox.createPaymentIntent(5_000);
    sandbox.handRefund(intent.id, 100);
    const read = await stripe.paymentIntents.retrieve(intent.id, { expand: ['latest_charge.refunds.data.charge', 'customer'] });
    const refund = listOf(expanded(read.latest_charge).refunds).data[0]!;
    expect(expanded(refund.charge)).toMatchObject({ id: intent.latest_charge, amount_refunded: 100 });
    expect(expanded(read.customer)).toMatchObject({ object: 'customer' });
    const tooDeep = await rejectionOf(stripe.paymentIntents.retrieve(intent.id, { expand: ['latest_charge.refunds.data.charge.customer'] }));
    expect(tooDeep).toMatchObject({
      statusCode: 400,
      param: 'expand',
      message: 'You cannot expand more than 4 levels of a property. Property: latest_charge.refunds.data.charge.customer',
    });
  });

  it('only what Stripe’s objects can expand: a charge has no dispute field (disputed says it), so latest_charge.dispute is refused', async () => {
    const sandbox = await useSandbox();
    const stripe = sandbox.stripe();
    const intent = await sandbox.createPaymentIntent(5_000, 'pm_card_createDispute');
    const refused = await rejectionOf(stripe.paymentIntents.retrieve(intent.id, { expand: ['latest_charge.dispute'] }));
    expect(refused).toMatchObject({ statusCode: 400, param: 'expand', message: 'This property cannot be expanded (latest_charge.dispute).' });
    expect(expanded((await stripe.paymentIntents.retrieve(intent.id, { expand: ['latest_charge'] })).latest_charge).disputed).toBe(true);
    const [dispute] = (await stripe.disputes.list({ payment_intent: intent.id, expand: ['data.charge'] })).data;
    expect(expanded(dispute!.charge)).toMatchObject({ id: intent.latest_charge, disputed: true });
    expect(expanded((await stripe.disputes.retrieve(dispute!.id, { expand: ['payment_intent'] })).payment_intent)).toMatchObject({ id: intent.id });
  });

  it('lists expand from data: refunds.list with data.charge expands each refund’s charge; a path without data is refused', async () => {
    const sandbox = await useSandbox();
    const stripe = sandbox.stripe();
    const intent = await sandbox.createPaymentIntent(5_000);
    sandbox.handRefund(intent.id, 100);
    sandbox.handRefund(intent.id, 200);
    const list = await stripe.refunds.list({ payment_intent: intent.id, expand: ['data.charge', 'data.payment_intent'] });
    expect(list.data.map((refund) => [expanded(refund.charge).amount_refunded, expanded(refund.payment_intent).id])).toEqual([
      [300, intent.id],
      [300, intent.id],
    ]);
    expect(await rejectionOf(stripe.refunds.list({ payment_intent: intent.id, expand: ['charge'] }))).toMatchObject({
      statusCode: 400,
      message: 'This property cannot be expanded (charge).',
    });
  });

  it('expand ignored (a setting): every field answers as an id, whatever the path, so a caller’s fallback reads are what it gets', async () => {
    const sandbox = await useSandbox({ expand: 'ignore' });
    const stripe = sandbox.stripe();
    const intent = await sandbox.createPaymentIntent(5_000, 'pm_card_createDispute');
    const read = await stripe.paymentIntents.retrieve(intent.id, { expand: ['latest_charge.refunds', 'customer', 'latest_charge.refunds.data.charge.customer'] });
    expect([typeof read.latest_charge, typeof read.customer, typeof read.payment_method]).toEqual(['string', 'string', 'string']);
    const [dispute] = (await stripe.disputes.list({ payment_intent: intent.id, expand: ['data.charge', 'data.nothing'] })).data;
    expect(typeof dispute!.charge).toBe('string');
    // The fallback: the charge read by its id says what the expansion would have.
    expect((await stripe.charges.retrieve(String(read.latest_charge), { expand: ['refunds'] })).refunds).toBeUndefined();
    expect((await stripe.charges.retrieve(String(read.latest_charge))).disputed).toBe(true);
    expect(sandbox.configure({ expand: 'honour' })).toMatchObject({ expand: 'honour' });
    expect(typeof (await stripe.paymentIntents.retrieve(intent.id, { expand: ['latest_charge'] })).latest_charge).toBe('object');
  });
});
