import Stripe from 'stripe';
import { describe, expect, it } from 'vitest';
import { manualClock, useSandbox } from '../sandbox/support.ts';

// The sandbox's GET /v1/refunds takes Stripe's `created` filter (an exact second, or gt/gte/lt/lte
// bounds in unix seconds) beside `payment_intent`, and pages within the filtered list with
// `has_more` and `starting_after`, as Stripe does.

const HOUR_MS = 3_600_000;

/** A payment with a hand refund every hour from the clock's start, `count` of them, at `amountCents` each. */
async function useHourlyRefunds(count: number, amountCents = 100) {
  const clock = manualClock();
  const sandbox = await useSandbox({ clockMs: clock.nowMs });
  const intent = await sandbox.createPaymentIntent(100_000);
  const startS = clock.nowMs() / 1000;
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    ids.push(sandbox.handRefund(intent.id, amountCents).id);
    clock.advance(HOUR_MS);
  }
  return { sandbox, stripe: sandbox.stripe(), intent: intent.id, startS, ids };
}

describe('sandbox: listing refunds by when they were created', () => {
  it('created[gte] and created[lte] bound the list, both ends included, newest first', async () => {
    const { stripe, intent, startS, ids } = await useHourlyRefunds(6);
    const list = await stripe.refunds.list({ payment_intent: intent, created: { gte: startS + 3600, lte: startS + 3 * 3600 } });
    expect(list.data.map((r) => r.id)).toEqual([ids[3], ids[2], ids[1]]);
    expect(list.has_more).toBe(false);
    expect(list.url).toBe('/v1/refunds');
  });

  it('created[gt] and created[lt] leave their bounds out; created=<t> is that second alone', async () => {
    const { stripe, intent, startS, ids } = await useHourlyRefunds(4);
    const open = await stripe.refunds.list({ payment_intent: intent, created: { gt: startS, lt: startS + 3 * 3600 } });
    expect(open.data.map((r) => r.id)).toEqual([ids[2], ids[1]]);
    const exact = await stripe.refunds.list({ payment_intent: intent, created: startS + 2 * 3600 });
    expect(exact.data.map((r) => r.id)).toEqual([ids[2]]);
  });

  it('pages within the filtered list with has_more and starting_after, so auto-pagination reads every refund once', async () => {
    const { stripe, intent, startS, ids } = await useHourlyRefunds(25, 1);
    const created = { gte: startS + 2 * 3600, lte: startS + 22 * 3600 };
    const first = await stripe.refunds.list({ payment_intent: intent, created, limit: 10 });
    expect([first.data.length, first.has_more]).toEqual([10, true]);
    const second = await stripe.refunds.list({ payment_intent: intent, created, limit: 10, starting_after: first.data.at(-1)!.id });
    expect([second.data.length, second.has_more]).toEqual([10, true]);
    const third = await stripe.refunds.list({ payment_intent: intent, created, limit: 10, starting_after: second.data.at(-1)!.id });
    expect([third.data.length, third.has_more]).toEqual([1, false]);
    const all: string[] = [];
    for await (const refund of stripe.refunds.list({ payment_intent: intent, created, limit: 10 })) all.push(refund.id);
    expect(all).toEqual(ids.slice(2, 23).reverse());
  });

  it('refuses a bound Stripe does not have and a time that is not whole seconds, naming the parameter', async () => {
    const { sandbox, intent } = await useHourlyRefunds(1);
    const refusal = async (query: string) => {
      const response = await fetch(`${sandbox.url}/v1/refunds?payment_intent=${intent}&${query}`, { headers: { authorization: `Bearer ${sandbox.apiKey}` } });
      return { status: response.status, error: ((await response.json()) as { error: { code: string; param: string } }).error };
    };
    expect(await refusal('created[since]=1')).toMatchObject({ status: 400, error: { code: 'parameter_unknown', param: 'created[since]' } });
    expect(await refusal('created[gte]=soon')).toMatchObject({ status: 400, error: { code: 'parameter_invalid_integer', param: 'created[gte]' } });
    expect(await refusal('created=1.5')).toMatchObject({ status: 400, error: { code: 'parameter_invalid_integer', param: 'created' } });
    // Through the SDK, the refusal is Stripe's own error class.
    await expect(sandbox.stripe().refunds.list({ payment_intent: intent, created: { gte: -1 } })).rejects.toBeInstanceOf(Stripe.errors.StripeInvalidRequestError);
  });
});
