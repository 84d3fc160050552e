import Stripe from 'stripe';
import type { Dispatched } from '../../shared/entries.ts';
import type { JsonObject } from '../../shared/json.ts';
import { describe, expect, it } from 'vitest';
import { TargetRejectedError } from '../../server/gate/target.ts';
import { createStripeClient, EFFECT_METADATA_KEY, LiveKeyError, StripeRefunds } from '../../server/targets/stripe-refunds.ts';
import { openStripeSandbox } from './stripe-world.ts';

const EFFECT_ID = 'a1b2c3d4e5f6';
const OTHER_EFFECT_ID = '0123456789ab';

/** A sandbox, the target over the real SDK, and one paid intent of $50.00. */
async function buildTarget(amountCents = 5_000, paymentMethod: 'pm_card_visa' | 'pm_card_createDispute' = 'pm_card_visa') {
  const sandbox = await openStripeSandbox({ settle: 'manual' });
  const target = new StripeRefunds(createStripeClient(sandbox.apiKey, { host: sandbox.host, port: sandbox.port, protocol: 'http' }));
  const intent = await sandbox.createPaymentIntent(amountCents, paymentMethod);
  return { sandbox, target, pi: intent.id, effect: { payment_intent: intent.id, amount: 2_000 } };
}

/** An open DISPATCHED of another effect, as the journal hands it to a facts check. */
function dispatchedEntry(effectId: string, effect: JsonObject): Dispatched {
  return { effect_id: effectId, kind: 'DISPATCHED', ts_ms: 1, prev: null, hash: 'h'.repeat(64), effect, lease: null, premises: null, checks: { lease_live: true, lease: null }, reserves: String(effect.payment_intent) };
}

/** The error a promise rejects with (fails the test when it resolves). */
async function rejectionOf(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected a rejection, but the call succeeded');
}

describe('createStripeClient', () => {
  it.each(['sk_live_51abcDEF', 'rk_live_51abcDEF', '', 'sk_test_', 'pk_test_51abc', ' sk_test_51abc'])(
    'refuses the key %j with LiveKeyError: Interlock only talks to test mode',
    (key) => {
      // seed: test_interlock.py test_stripe_target_refuses_live_keys
      expect(() => createStripeClient(key)).toThrow(LiveKeyError);
    },
  );

  it.each(['sk_test_51abcDEF', 'rk_test_51abcDEF'])('accepts the test-mode key %s', (key) => {
    expect(createStripeClient(key)).toBeInstanceOf(Stripe);
  });
});

describe('StripeRefunds.apply', () => {
  it('creates one refund tagged with the effect id in metadata, sent under the effect id as idempotency key', async () => {
    const { sandbox, target, pi, effect } = await buildTarget();
    const result = await target.apply(EFFECT_ID, effect);
    const ledger = sandbox.refunds(pi);
    expect(ledger).toHaveLength(1);
    expect(ledger[0]).toMatchObject({ amount: 2_000, payment_intent: pi, metadata: { [EFFECT_METADATA_KEY]: EFFECT_ID } });
    expect(result).toEqual({ status: 'ok', refund: ledger[0]!.id, amount: 2_000 });
    // The same request under the effect id as key is a replay of that refund, so the key was the effect id.
    const replay = await sandbox.stripe().refunds.create(
      { payment_intent: pi, amount: 2_000, metadata: { [EFFECT_METADATA_KEY]: EFFECT_ID } },
      { idempotencyKey: EFFECT_ID },
    );
    expect(replay.id).toBe(ledger[0]!.id);
    expect(replay.lastResponse.headers['idempotent-replayed']).toBe('true');
  });

  it('a replay answers already_processed with the same refund id, and Stripe makes no second refund', async () => {
    const { sandbox, target, pi, effect } = await buildTarget();
    const first = await target.apply(EFFECT_ID, effect);
    const second = await target.apply(EFFECT_ID, effect);
    expect(second).toEqual({ status: 'already_processed', refund: (first as { refund: string }).refund, amount: 2_000 });
    expect(sandbox.refunds(pi)).toHaveLength(1);
  });

  it('a 400 for an amount larger than what is left is a definite rejection (TargetRejectedError), and nothing is made', async () => {
    const { sandbox, target, pi } = await buildTarget();
    const error = await rejectionOf(target.apply(EFFECT_ID, { payment_intent: pi, amount: 5_001 }));
    expect(error).toBeInstanceOf(TargetRejectedError);
    expect(error.message).toMatch(/^400 amount_too_large: /);
    expect(sandbox.refunds(pi)).toEqual([]);
  });

  it('a 400 for a disputed charge is a definite rejection (TargetRejectedError)', async () => {
    const { sandbox, target, pi, effect } = await buildTarget(5_000, 'pm_card_createDispute');
    const error = await rejectionOf(target.apply(EFFECT_ID, effect));
    expect(error).toBeInstanceOf(TargetRejectedError);
    expect(error.message).toMatch(/^400 charge_disputed: /);
    expect(sandbox.refunds(pi)).toEqual([]);
  });

  it('a 404 for an unknown payment intent is a definite rejection (TargetRejectedError)', async () => {
    const { target } = await buildTarget();
    const error = await rejectionOf(target.apply(EFFECT_ID, { payment_intent: 'pi_doesnotexist', amount: 100 }));
    expect(error).toBeInstanceOf(TargetRejectedError);
  });

  it('a 500 is an unknown outcome: the error is not a TargetRejectedError', async () => {
    const { sandbox, target, pi, effect } = await buildTarget();
    sandbox.setFault({ on: 'refund_create', action: 'error_500' });
    const error = await rejectionOf(target.apply(EFFECT_ID, effect));
    expect(error).not.toBeInstanceOf(TargetRejectedError);
    expect(error).toBeInstanceOf(Stripe.errors.StripeAPIError);
    expect(sandbox.refunds(pi)).toEqual([]);
  });

  it('a 500 after the refund was made is an unknown outcome too, and the refund is there to be found', async () => {
    const { sandbox, target, pi, effect } = await buildTarget();
    sandbox.setFault({ on: 'refund_create', action: 'error_500_after_commit' });
    expect(await rejectionOf(target.apply(EFFECT_ID, effect))).not.toBeInstanceOf(TargetRejectedError);
    expect(sandbox.refunds(pi)).toHaveLength(1);
    expect(await target.query(EFFECT_ID, effect)).toBe(sandbox.refunds(pi)[0]!.id);
  });

  it('a dropped connection (the SDK retry dropped too) is an unknown outcome, though the refund was made', async () => {
    const { sandbox, target, pi, effect } = await buildTarget();
    // The SDK retries a reset connection once with the same key, so two drops make the call fail.
    sandbox.setFault({ on: 'refund_create', action: 'drop_after_commit', times: 2 });
    const error = await rejectionOf(target.apply(EFFECT_ID, effect));
    expect(error).not.toBeInstanceOf(TargetRejectedError);
    expect(error).toBeInstanceOf(Stripe.errors.StripeConnectionError);
    expect(sandbox.refunds(pi)).toHaveLength(1);
  });
});

describe('StripeRefunds.query', () => {
  it('finds the refund carrying the effect id in its metadata, and nothing for another effect or a hand refund', async () => {
    const { sandbox, target, pi, effect } = await buildTarget();
    expect(await target.query(EFFECT_ID, effect)).toBeNull();
    sandbox.handRefund(pi, 500);
    expect(await target.query(EFFECT_ID, effect)).toBeNull();
    const sent = (await target.apply(EFFECT_ID, effect)) as { refund: string };
    expect(await target.query(EFFECT_ID, effect)).toBe(sent.refund);
    expect(await target.query(OTHER_EFFECT_ID, effect)).toBeNull();
  });

  it('finds a refund Stripe later failed: it was sent, so sending again would be a second refund', async () => {
    const { sandbox, target, effect } = await buildTarget();
    const sent = (await target.apply(EFFECT_ID, effect)) as { refund: string };
    expect(sandbox.settle(sent.refund, 'failed')[0]).toMatchObject({ status: 'failed' });
    expect(await target.query(EFFECT_ID, effect)).toBe(sent.refund);
  });

  it('reads past the first page of refunds', async () => {
    const { sandbox, target, pi, effect } = await buildTarget(50_000);
    const sent = (await target.apply(EFFECT_ID, effect)) as { refund: string };
    for (let i = 0; i < 105; i++) sandbox.handRefund(pi, 1);
    expect(await target.query(EFFECT_ID, effect)).toBe(sent.refund);
    expect((await target.capture(pi)).refunded_by_others).toBe(2_000 + 105);
  });
});

describe('StripeRefunds.capture and explain', () => {
  it('capture reads the facts a refund decision relies on', async () => {
    const { target, pi } = await buildTarget();
    expect(await target.capture(pi)).toEqual({
      payment_intent: pi,
      currency: 'usd',
      amount_received: 5_000,
      refunded_by_others: 0,
      refunded_outside: 0,
      disputed: false,
    });
  });

  it('facts that still hold explain to nothing, and the effect’s own refund never counts as another’s', async () => {
    const { target, pi, effect } = await buildTarget();
    const premises = await target.capture(pi);
    expect(await target.explain(premises, EFFECT_ID, effect)).toEqual({ violations: [], changes: [], repairs: [] });
    await target.apply(EFFECT_ID, effect);
    expect(await target.explain(premises, EFFECT_ID, effect)).toEqual({ violations: [], changes: [], repairs: [] });
    // A failed refund returned nothing, so it is not counted either.
    expect((await target.explain(premises, OTHER_EFFECT_ID, effect)).changes).toEqual([
      { field: 'refunded_by_others', was: 0, now: 2_000 },
    ]);
  });

  it('a hand refund that leaves room changes refunded_by_others 0→1000 and suggests still_fits', async () => {
    // seed: test_explained.py test_stripe_explain_with_fake_client
    const { sandbox, target, pi, effect } = await buildTarget();
    const premises = await target.capture(pi);
    sandbox.handRefund(pi, 1_000);
    expect(await target.explain(premises, EFFECT_ID, effect)).toEqual({
      violations: ['refunded_by_others: was 0, now 1000', 'refunded_outside: was 0, now 1000'],
      changes: [
        { field: 'refunded_by_others', was: 0, now: 1_000 },
        { field: 'refunded_outside', was: 0, now: 1_000 },
      ],
      repairs: [
        {
          code: 'still_fits',
          set: {},
          why: '$20.00 still fits: $40.00 of $50.00 is left to refund, unless the refund made outside Interlock was this one',
        },
      ],
    });
  });

  it('a hand refund that leaves less than asked suggests refund_remaining with exactly what is left', async () => {
    // seed: test_explained.py test_stripe_explain_with_fake_client
    const { sandbox, target, pi, effect } = await buildTarget();
    const premises = await target.capture(pi);
    sandbox.handRefund(pi, 4_000);
    const explained = await target.explain(premises, EFFECT_ID, effect);
    expect(explained.changes).toEqual([
      { field: 'refunded_by_others', was: 0, now: 4_000 },
      { field: 'refunded_outside', was: 0, now: 4_000 },
    ]);
    expect(explained.repairs).toEqual([{ code: 'refund_remaining', set: { amount: 1_000 }, why: 'Refund $10.00, what is left of $50.00' }]);
  });

  it('nothing left to refund: the change is reported and no repair is suggested', async () => {
    const { sandbox, target, pi, effect } = await buildTarget();
    const premises = await target.capture(pi);
    sandbox.handRefund(pi, 5_000);
    expect(await target.explain(premises, EFFECT_ID, effect)).toMatchObject({
      changes: [
        { field: 'refunded_by_others', now: 5_000 },
        { field: 'refunded_outside', now: 5_000 },
      ],
      repairs: [],
    });
  });

  it('a dispute changes disputed false→true and suggests no repair', async () => {
    const { sandbox, target, pi, effect } = await buildTarget();
    const premises = await target.capture(pi);
    sandbox.openDispute(pi);
    expect(await target.explain(premises, EFFECT_ID, effect)).toEqual({
      violations: ['disputed: was false, now true'],
      changes: [{ field: 'disputed', was: false, now: true }],
      repairs: [],
    });
  });

  it('an open dispatch on the payment counts as refunded until Stripe shows its refund, and never twice', async () => {
    const { target, pi, effect } = await buildTarget();
    const dispatched = dispatchedEntry(OTHER_EFFECT_ID, { payment_intent: pi, amount: 1_500 });
    expect(await target.capture(pi, EFFECT_ID, [dispatched])).toMatchObject({ refunded_by_others: 1_500, refunded_outside: 0 });
    // Sent but not yet committed: Stripe shows it, so it is counted there only.
    await target.apply(OTHER_EFFECT_ID, { payment_intent: pi, amount: 1_500 });
    expect(await target.capture(pi, EFFECT_ID, [dispatched])).toMatchObject({ refunded_by_others: 1_500 });
    // The effect's own dispatch is never another's.
    expect((await target.capture(pi, OTHER_EFFECT_ID, [dispatched])).refunded_by_others).toBe(0);
    expect((await target.explain(await target.capture(pi), EFFECT_ID, effect)).violations).toEqual([]);
  });

  it('under the rules (headroom), another Interlock refund that leaves room is no violation; one that does not fit is', async () => {
    const { target, pi } = await buildTarget();
    const effect = { payment_intent: pi, amount: 2_000 };
    const premises = await target.capture(pi);
    await target.apply(OTHER_EFFECT_ID, { payment_intent: pi, amount: 2_500 });
    expect(await target.explain(premises, EFFECT_ID, effect, { headroom: true })).toEqual({ violations: [], changes: [], repairs: [] });
    // A person's approval is judged on the exact facts the person saw.
    expect((await target.explain(premises, EFFECT_ID, effect)).changes).toEqual([{ field: 'refunded_by_others', was: 0, now: 2_500 }]);
    // $30.00 asked, $25.00 left: refused, with what is left as the repair.
    const refused = await target.explain(premises, EFFECT_ID, { payment_intent: pi, amount: 3_000 }, { headroom: true });
    expect(refused.changes).toEqual([{ field: 'refunded_by_others', was: 0, now: 2_500 }]);
    expect(refused.repairs).toMatchObject([{ code: 'refund_remaining', set: { amount: 2_500 } }]);
  });

  it('under the rules (headroom), a refund made outside Interlock is always a violation, even with room left', async () => {
    const { sandbox, target, pi, effect } = await buildTarget();
    const premises = await target.capture(pi);
    sandbox.handRefund(pi, 500);
    expect((await target.explain(premises, EFFECT_ID, effect, { headroom: true })).changes).toEqual([
      { field: 'refunded_by_others', was: 0, now: 500 },
      { field: 'refunded_outside', was: 0, now: 500 },
    ]);
  });

  it('facts recorded before refunds outside Interlock were told apart are compared exactly, as they were recorded', async () => {
    const { target, pi, effect } = await buildTarget();
    const { refunded_outside: _new, ...recorded } = await target.capture(pi);
    expect(await target.explain(recorded, EFFECT_ID, effect)).toEqual({ violations: [], changes: [], repairs: [] });
    await target.apply(OTHER_EFFECT_ID, { payment_intent: pi, amount: 500 });
    expect((await target.explain(recorded, EFFECT_ID, effect, { headroom: true })).changes).toEqual([{ field: 'refunded_by_others', was: 0, now: 500 }]);
  });

  it('a charge paid with pm_card_createDispute is disputed from the start', async () => {
    const { target, pi } = await buildTarget(5_000, 'pm_card_createDispute');
    expect((await target.capture(pi)).disputed).toBe(true);
  });

  it.each([
    ['no facts at all', null, 'the recorded facts name no payment intent'],
    ['facts about another payment', { payment_intent: 'pi_other', refunded_by_others: 0 }, 'the recorded facts are about another payment'],
  ])('premises with %s are a violation, never a pass', async (_name, premises, violation) => {
    const { target, effect } = await buildTarget();
    expect((await target.explain(premises, EFFECT_ID, effect)).violations).toEqual([violation]);
  });

  it('a recorded fact that is missing now (or was never recorded) is a change, never a pass', async () => {
    const { target, pi, effect } = await buildTarget();
    const { disputed: _dropped, ...premises } = await target.capture(pi);
    expect((await target.explain(premises, EFFECT_ID, effect)).changes).toEqual([{ field: 'disputed', was: null, now: false }]);
  });
});

describe('StripeRefunds.invalidEffect', () => {
  const target = new StripeRefunds(createStripeClient('sk_test_unused'));
  const pi = 'pi_3Pabc123';

  it('accepts a payment intent and a whole, positive amount of cents', () => {
    expect(target.invalidEffect({ payment_intent: pi, amount: 1 })).toBeNull();
    expect(target.invalidEffect({ payment_intent: pi, amount: 99_999_999 })).toBeNull();
  });

  it.each([
    ['an extra key', { payment_intent: pi, amount: 100, reason: 'x' }],
    ['a missing amount', { payment_intent: pi }],
    ['a fractional amount', { payment_intent: pi, amount: 10.5 }],
    ['a zero amount', { payment_intent: pi, amount: 0 }],
    ['a negative amount', { payment_intent: pi, amount: -100 }],
    ['an amount above Stripe’s limit', { payment_intent: pi, amount: 100_000_000 }],
    ['an unsafe integer amount', { payment_intent: pi, amount: 2 ** 53 }],
    ['an amount as a string', { payment_intent: pi, amount: '100' }],
    ['an amount as a boolean', { payment_intent: pi, amount: true }],
    ['a charge id instead of a payment intent', { payment_intent: 'ch_3Pabc', amount: 100 }],
    ['a payment intent with a path in it', { payment_intent: 'pi_1/../refunds', amount: 100 }],
    ['an empty payment intent id', { payment_intent: 'pi_', amount: 100 }],
    ['a payment intent that is not a string', { payment_intent: 42, amount: 100 }],
  ])('refuses %s', (_name, effect) => {
    expect(target.invalidEffect(effect)).toEqual(expect.any(String));
  });
});
