import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { startSandbox } from '../../server/sandbox/index.ts';
import { manualClock, rejectionOf, useSandbox } from './support.ts';

const DAY_MS = 86_400_000;

/** The object an expanded field holds (fails the test when the field is still an id). */
function expanded<T extends { id: string }>(value: string | T | null | undefined): T {
  if (value === null || value === undefined || typeof value === 'string') throw new Error(`expected an expanded object, got ${String(value)}`);
  return value;
}

describe('sandbox customers, cards and charge dates, through the real SDK', () => {
  it('a demo payment is for a named test customer, paid with visa 4242, and expands into all three', async () => {
    const sandbox = await useSandbox();
    const intent = await sandbox.createPaymentIntent(4_200);
    expect(intent.customer).toMatch(/^cus_[0-9A-Za-z]{24}$/);
    expect(intent.payment_method).toMatch(/^pm_[0-9A-Za-z]{24}$/);
    const read = await sandbox.stripe().paymentIntents.retrieve(intent.id, { expand: ['latest_charge', 'customer', 'payment_method'] });
    expect(expanded(read.customer)).toMatchObject({ object: 'customer', id: intent.customer, name: 'Jenny Rosen', email: 'jenny.rosen@example.com' });
    expect(expanded(read.payment_method).card).toMatchObject({ brand: 'visa', last4: '4242' });
    const charge = expanded(read.latest_charge);
    expect(charge).toMatchObject({
      object: 'charge',
      customer: intent.customer,
      payment_method: intent.payment_method,
      payment_method_details: { type: 'card', card: { brand: 'visa', last4: '4242' } },
      billing_details: { name: 'Jenny Rosen', email: 'jenny.rosen@example.com' },
    });
    expect(Math.abs(charge.created * 1000 - sandbox.nowMs())).toBeLessThan(2_000);
  });

  it('POST /_sandbox/payment-intents sets the customer, the card and the charge date; customer null means none', async () => {
    const clock = manualClock();
    const sandbox = await useSandbox({ clockMs: clock.nowMs });
    const post = (body: object) =>
      fetch(`${sandbox.url}/_sandbox/payment-intents`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const chargedAtMs = clock.nowMs() - 3 * DAY_MS;
    const made = await post({ amountCents: 9_900, customer: { name: 'Ada Lovelace', email: 'ada@example.com' }, card: { brand: 'amex', last4: '0005' }, chargedAtMs });
    expect(made.status).toBe(200);
    const { id } = (await made.json()) as { id: string };
    const read = await sandbox.stripe().paymentIntents.retrieve(id, { expand: ['latest_charge', 'customer', 'payment_method'] });
    expect(read).toMatchObject({ customer: { name: 'Ada Lovelace', email: 'ada@example.com' }, payment_method: { card: { brand: 'amex', last4: '0005' } } });
    expect(expanded(read.latest_charge).created).toBe(Math.floor(chargedAtMs / 1000));
    expect(read.created).toBe(Math.floor(chargedAtMs / 1000));

    const anonymous = (await (await post({ amountCents: 500, customer: null })).json()) as { id: string; customer: string | null };
    expect(anonymous.customer).toBeNull();
    expect((await sandbox.stripe().paymentIntents.retrieve(anonymous.id, { expand: ['customer'] })).customer).toBeNull();

    const refused = async (body: object) => {
      const answer = await post({ amountCents: 500, ...body });
      return [answer.status, ((await answer.json()) as { error: { param: string } }).error.param];
    };
    expect(await refused({ card: { brand: 'diners club', last4: '1234' } })).toEqual([400, 'card']);
    expect(await refused({ card: { brand: 'visa', last4: '12345' } })).toEqual([400, 'card[last4]']);
    expect(await refused({ chargedAtMs: clock.nowMs() + DAY_MS })).toEqual([400, 'chargedAtMs']);
    expect(await refused({ customer: { email: 'not an address' } })).toEqual([400, 'email']);
    expect(await refused({ customer: 'cus_x' })).toEqual([400, 'customer']);
  });

  it('customers.create, then a payment intent for that customer confirmed with pm_card_mastercard', async () => {
    const sandbox = await useSandbox();
    const stripe = sandbox.stripe();
    const customer = await stripe.customers.create({ name: 'Grace Hopper', email: 'grace@example.com' });
    expect(customer).toMatchObject({ object: 'customer', name: 'Grace Hopper', email: 'grace@example.com', livemode: false });
    expect(await stripe.customers.retrieve(customer.id)).toMatchObject({ id: customer.id, name: 'Grace Hopper' });
    const intent = await stripe.paymentIntents.create({ amount: 1_200, currency: 'usd', customer: customer.id, payment_method: 'pm_card_mastercard', confirm: true });
    expect(intent.customer).toBe(customer.id);
    const method = await stripe.paymentMethods.retrieve(String(intent.payment_method));
    expect(method).toMatchObject({ object: 'payment_method', type: 'card', customer: customer.id, card: { brand: 'mastercard', last4: '4444' } });
    const unknown = await rejectionOf(stripe.paymentIntents.create({ amount: 100, currency: 'usd', customer: 'cus_nope' }));
    expect(unknown).toMatchObject({ statusCode: 400, code: 'resource_missing', param: 'customer' });
    expect(await rejectionOf(stripe.customers.create({ email: 'nope' }))).toMatchObject({ statusCode: 400, code: 'email_invalid' });
    expect(await rejectionOf(stripe.customers.retrieve('cus_nope'))).toMatchObject({ statusCode: 404, code: 'resource_missing' });
  });

  it('expand: only the fields an object can expand; anything else is 400 as Stripe refuses it', async () => {
    const sandbox = await useSandbox();
    const stripe = sandbox.stripe();
    const intent = await sandbox.createPaymentIntent(3_000);
    const refused = await rejectionOf(stripe.paymentIntents.retrieve(intent.id, { expand: ['latest_charge.balance_transaction'] }));
    expect(refused).toMatchObject({ statusCode: 400, param: 'expand', message: 'This property cannot be expanded (latest_charge.balance_transaction).' });
    const charge = await stripe.charges.retrieve(String(intent.latest_charge), { expand: ['customer', 'payment_intent'] });
    expect(charge).toMatchObject({ customer: { object: 'customer' }, payment_intent: { id: intent.id, object: 'payment_intent' } });
    const refund = sandbox.handRefund(intent.id, 500);
    expect(await stripe.refunds.retrieve(refund.id, { expand: ['charge'] })).toMatchObject({ charge: { id: charge.id, amount_refunded: 500 } });
    // Without expand, every field stays an id, as before.
    expect(typeof (await stripe.paymentIntents.retrieve(intent.id)).latest_charge).toBe('string');
  });

  it('customers and cards survive a restart of a sandbox kept in a file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sandbox-customers-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, 'sandbox.sqlite');
    const first = await startSandbox({ file });
    const intent = await first.createPaymentIntent(2_000, 'pm_card_amex', { customer: { name: 'Kept', email: null } });
    await first.close();
    const second = await startSandbox({ file });
    onTestFinished(() => second.close());
    const read = await second.stripe().paymentIntents.retrieve(intent.id, { expand: ['customer', 'payment_method'] });
    expect(read).toMatchObject({ customer: { name: 'Kept', email: null }, payment_method: { card: { brand: 'amex', last4: '8431' } } });
  });
});
