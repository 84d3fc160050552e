import type Stripe from 'stripe';
import { describe, expect, it } from 'vitest';
import type { JsonObject } from '../../shared/json.ts';
import { MemoryJournal } from '../../db/journal-store.ts';
import { verifyReceipt } from '../../server/receipts/verify.ts';
import {
  confirmByLookup,
  isLookupDue,
  Reconciler,
  type RefundLister,
  reconcilerLimits,
} from '../../server/confirm/reconciler.ts';
import { EFFECT_METADATA_KEY } from '../../server/targets/stripe-refunds.ts';
import {
  appendSteps,
  buildRefund,
  committedSteps,
  confirmedStatuses,
  EFFECT_ID,
  journalWith,
  NOW_MS,
  PAYMENT_INTENT,
  REFUND_ID,
  sentSteps,
} from '../support/confirm-world.ts';
import { buildConfirmWorld } from '../support/confirm-stripe.ts';

/** A Stripe that lists the given refunds for any payment, counting the requests. */
function fakeLister(refunds: () => JsonObject[]): RefundLister & { calls: string[] } {
  const calls: string[] = [];
  return {
    calls,
    async listRefunds(paymentIntent) {
      calls.push(paymentIntent);
      return refunds().filter((r) => r.payment_intent === paymentIntent) as unknown as Stripe.Refund[];
    },
  };
}

const MINUTE_MS = 60_000;

describe('confirmByLookup: pull, no webhook (core §8.4)', () => {
  // seed: tests/test_confirmations.py Recording test_pull_confirmation_by_lookup
  it('a refund whose webhook never came is confirmed by listing the payment refunds: via lookup, no event, created from Stripe', async () => {
    const world = await buildConfirmWorld({ webhook: false, settle: 'immediate' });
    const { effectId, status } = await world.sendRefund();
    expect(status).toBe('COMMITTED');
    expect(await confirmByLookup(world.journal, world.target, effectId)).toBe('CONFIRMED');
    const [refund] = world.sandbox.refunds(world.intent.id);
    const confirmed = (await world.journal.entries(effectId)).filter((e) => e.kind === 'CONFIRMED');
    expect(confirmed.map(({ via, event, refund: id, status: s, amount, payment_intent, created }) => ({ via, event, id, s, amount, payment_intent, created }))).toEqual([
      { via: 'lookup', event: null, id: refund!.id, s: 'succeeded', amount: 700, payment_intent: world.intent.id, created: refund!.created },
    ]);
    expect(await confirmByLookup(world.journal, world.target, effectId)).toBe('DUPLICATE_IGNORED');
  });

  it('a refund Stripe failed is recorded as failed: the lookup lists refunds in every status', async () => {
    const world = await buildConfirmWorld({ webhook: false, settle: 'manual' });
    const { effectId } = await world.sendRefund();
    world.sandbox.settle(world.sandbox.refunds(world.intent.id)[0]!.id, 'failed', 'expired_or_canceled_card');
    expect(await confirmByLookup(world.journal, world.target, effectId)).toBe('CONFIRMED');
    expect(await confirmedStatuses(world.journal, effectId)).toEqual(['failed']);
    expect((await verifyReceipt({ effect_id: effectId, entries: await world.journal.entries(effectId) })).confirmed_by_target).toBe(false);
  });

  it('only refunds whose metadata names the effect count; a hand refund on the same payment is not ours', async () => {
    const world = await buildConfirmWorld({ webhook: false, settle: 'immediate' });
    world.sandbox.handRefund(world.intent.id, 300);
    const { effectId } = await world.sendRefund(700);
    expect(await confirmByLookup(world.journal, world.target, effectId)).toBe('CONFIRMED');
    expect((await world.journal.entries(effectId)).filter((e) => e.kind === 'CONFIRMED').map((e) => e.amount)).toEqual([700]);
  });

  it('NOT_FOUND when no refund of the payment names the effect, or nothing was ever sent', async () => {
    const lister = fakeLister(() => [buildRefund({ metadata: { [EFFECT_METADATA_KEY]: 'aaaaaaaaaaaa' } })]);
    expect(await confirmByLookup(await journalWith(committedSteps()), lister, EFFECT_ID)).toBe('NOT_FOUND');
    const notSent = await journalWith([['PROPOSED', { agent: 'refund-bot', lease: 'L', premises: {}, effect: {} }]]);
    expect(await confirmByLookup(notSent, lister, EFFECT_ID)).toBe('NOT_FOUND');
    expect(lister.calls).toEqual([PAYMENT_INTENT]);
  });

  it('a listed refund that does not match the send is refused, never recorded', async () => {
    const journal = await journalWith(committedSteps());
    expect(await confirmByLookup(journal, fakeLister(() => [buildRefund({ amount: 1 })]), EFFECT_ID)).toBe('REFUSED:mismatch');
    expect(await confirmedStatuses(journal)).toEqual([]);
  });
});

describe('isLookupDue: a sent refund with no final confirmation, afterMs after the commit', () => {
  const committedAtMs = NOW_MS; // journalWith stamps every entry at NOW_MS
  it.each<[string, Parameters<typeof journalWith>[0], number, boolean]>([
    ['sent but not committed', sentSteps(), committedAtMs + 10 * MINUTE_MS, false],
    ['committed 4 minutes ago', committedSteps(), committedAtMs + 4 * MINUTE_MS, false],
    ['committed exactly 5 minutes ago', committedSteps(), committedAtMs + 5 * MINUTE_MS, true],
    ['committed long ago, confirmed pending', [...committedSteps(), ['CONFIRMED', confirmed('pending')]], committedAtMs + 60 * MINUTE_MS, true],
    ['committed long ago, confirmed succeeded', [...committedSteps(), ['CONFIRMED', confirmed('succeeded')]], committedAtMs + 60 * MINUTE_MS, false],
    ['committed long ago, confirmed failed', [...committedSteps(), ['CONFIRMED', confirmed('failed')]], committedAtMs + 60 * MINUTE_MS, false],
    ['committed long ago, confirmed canceled', [...committedSteps(), ['CONFIRMED', confirmed('canceled')]], committedAtMs + 60 * MINUTE_MS, false],
  ])('%s: due %s', async (_name, steps, nowMs, expected) => {
    const chain = await (await journalWith(steps)).entries(EFFECT_ID);
    expect(isLookupDue(chain, nowMs, 5 * MINUTE_MS)).toBe(expected);
  });
});

function confirmed(status: string): JsonObject {
  return { via: 'webhook', event: `evt_${status}`, refund: REFUND_ID, status, amount: 2_000, payment_intent: PAYMENT_INTENT, created: 1 };
}

/** Five committed refunds on one journal, committed one second apart (oldest first), all still pending at Stripe. */
async function fivePendingRefunds() {
  let wallMs = NOW_MS;
  const journal = new MemoryJournal({ wallClockMs: () => wallMs });
  const ids = ['00000000000a', '00000000000b', '00000000000c', '00000000000d', '00000000000e'];
  for (const id of ids) {
    await appendSteps(journal, id, committedSteps(`re_${id}`));
    wallMs += 1_000;
  }
  const lister = fakeLister(() => ids.map((id) => buildRefund({ id: `re_${id}`, metadata: { [EFFECT_METADATA_KEY]: id } })));
  return { journal, ids, lister };
}

describe('Reconciler: bounded lookups on an injected clock', () => {
  it('nothing is looked up before afterMs; then the effect is confirmed by lookup and drops out once final', async () => {
    const world = await buildConfirmWorld({ webhook: false, settle: 'manual' });
    const { effectId } = await world.sendRefund();
    let nowMs = Date.now();
    const seen: string[] = [];
    const reconciler = new Reconciler({
      journal: world.journal,
      target: world.target,
      candidates: () => [effectId],
      nowMs: () => nowMs,
      afterMs: MINUTE_MS,
      onConfirmed: (id) => seen.push(id),
    });
    expect(await reconciler.runPass()).toEqual({ due: 0, looked: [] });
    nowMs += MINUTE_MS;
    expect(await reconciler.runPass()).toEqual({ due: 1, looked: [{ effectId, result: 'CONFIRMED' }] });
    expect(await confirmedStatuses(world.journal, effectId)).toEqual(['pending']);
    // Still pending: not looked up again until afterMs has passed since the last lookup.
    nowMs += MINUTE_MS - 1;
    expect(await reconciler.runPass()).toEqual({ due: 0, looked: [] });
    world.sandbox.settle(world.sandbox.refunds(world.intent.id)[0]!.id);
    nowMs += 1;
    expect(await reconciler.runPass()).toEqual({ due: 1, looked: [{ effectId, result: 'CONFIRMED' }] });
    expect(await confirmedStatuses(world.journal, effectId)).toEqual(['pending', 'succeeded']);
    nowMs += 10 * MINUTE_MS;
    expect(await reconciler.runPass()).toEqual({ due: 0, looked: [] });
    expect(seen).toEqual([effectId, effectId]);
  });

  it('at most lookupsPerPassMax lookups per pass, oldest commit first, the rest in later passes', async () => {
    const { journal, ids, lister } = await fivePendingRefunds();
    const nowMs = NOW_MS + 10 * MINUTE_MS;
    const reconciler = new Reconciler({ journal, target: lister, candidates: () => [...ids].reverse(), nowMs: () => nowMs, lookupsPerPassMax: 2 });
    const passes = [await reconciler.runPass(), await reconciler.runPass(), await reconciler.runPass(), await reconciler.runPass()];
    expect(passes.map((p) => [p.due, p.looked.map((l) => l.effectId)])).toEqual([
      [5, ids.slice(0, 2)],
      [3, ids.slice(2, 4)],
      [1, ids.slice(4)],
      [0, []],
    ]);
    expect(lister.calls).toHaveLength(5);
  });

  it('the effect looked up longest ago goes first once everything is due again', async () => {
    const { journal, ids, lister } = await fivePendingRefunds();
    let nowMs = NOW_MS + 10 * MINUTE_MS;
    const reconciler = new Reconciler({ journal, target: lister, candidates: () => ids, nowMs: () => nowMs, lookupsPerPassMax: 3, afterMs: MINUTE_MS });
    expect((await reconciler.runPass()).looked.map((l) => l.effectId)).toEqual(ids.slice(0, 3));
    nowMs += 1_000;
    expect((await reconciler.runPass()).looked.map((l) => l.effectId)).toEqual(ids.slice(3));
    nowMs += MINUTE_MS;
    expect((await reconciler.runPass()).looked.map((l) => l.effectId)).toEqual(ids.slice(0, 3));
  });

  it('a failed lookup is reported and the pass goes on to the next effect', async () => {
    const { journal, ids, lister } = await fivePendingRefunds();
    const errors: Array<[string | null, string]> = [];
    let calls = 0;
    const flaky: RefundLister = {
      listRefunds: async (pi) => {
        calls += 1;
        if (calls === 1) throw new Error('Stripe unreachable');
        return lister.listRefunds(pi);
      },
    };
    const reconciler = new Reconciler({
      journal,
      target: flaky,
      candidates: () => ids.slice(0, 2),
      nowMs: () => NOW_MS + 10 * MINUTE_MS,
      onError: (id, error) => errors.push([id, (error as Error).message]),
    });
    expect((await reconciler.runPass()).looked).toEqual([
      { effectId: ids[0], result: 'LOOKUP_FAILED' },
      { effectId: ids[1], result: 'CONFIRMED' },
    ]);
    expect(errors).toEqual([[ids[0], 'Stripe unreachable']]);
  });

  it(`start refuses a pace over ${reconcilerLimits.lookupsPerSecondMax} lookups/s (Stripe allows ~100 requests/s for everything)`, () => {
    const reconciler = new Reconciler({ journal: {} as never, target: fakeLister(() => []), candidates: () => [], nowMs: () => 0, lookupsPerPassMax: 10 });
    expect(() => reconciler.start(100)).toThrow(RangeError);
    expect(() => new Reconciler({ journal: {} as never, target: fakeLister(() => []), candidates: () => [], nowMs: () => 0, lookupsPerPassMax: 0 })).toThrow(
      RangeError,
    );
  });

  it('start runs passes on an interval until stop, never two at once, even when a pass outlasts the interval', async () => {
    const journal = await journalWith(committedSteps());
    const lister = fakeLister(() => [buildRefund({ status: 'pending' })]);
    let inFlight = 0;
    let inFlightMax = 0;
    const slow: RefundLister = {
      listRefunds: async (pi) => {
        inFlight += 1;
        inFlightMax = Math.max(inFlightMax, inFlight);
        await new Promise((resolve) => setTimeout(resolve, 120));
        inFlight -= 1;
        return lister.listRefunds(pi);
      },
    };
    // afterMs 0: a still-pending refund is due again on every pass.
    const reconciler = new Reconciler({ journal, target: slow, candidates: () => [EFFECT_ID], nowMs: () => NOW_MS, afterMs: 0, lookupsPerPassMax: 1 });
    reconciler.start(50);
    expect(() => reconciler.start(50)).toThrow(/already started/);
    await new Promise((resolve) => setTimeout(resolve, 500));
    await reconciler.stop();
    const callsAtStop = lister.calls.length;
    expect(callsAtStop).toBeGreaterThanOrEqual(2);
    expect(inFlightMax).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(lister.calls.length).toBe(callsAtStop);
    expect(await confirmedStatuses(journal)).toEqual(['pending']);
  });
});
