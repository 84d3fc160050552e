import { afterEach, describe, expect, it } from 'vitest';
import type { JsonObject } from '../../shared/json.ts';
import { type AppWorld, buildAppWorld } from '../support/app-world.ts';

// Adversarial review of the "headroom" a rule-approved refund gets (stripe-refunds.ts explain):
// only refunds Interlock itself made or reserved may move the facts between the rules' read and
// the gate's check. Each attack below changes the world in exactly that window (the inbox has
// read the facts and the rules passed; the gate is about to read them again). These held.

let world: AppWorld | undefined;
afterEach(async () => {
  await world?.close();
  world = undefined;
});

/** Run `between` once, just before the gate's own facts check of the next refund. */
function beforeGateCheck(w: AppWorld, between: (premises: JsonObject) => Promise<void> | void): void {
  const target = w.services.target;
  const explain = target.explain.bind(target);
  let done = false;
  target.explain = async (premises, effectId, effect, options) => {
    if (!done) {
      done = true;
      await between(premises as JsonObject);
    }
    return explain(premises, effectId, effect, options);
  };
}

const post = (w: AppWorld, request_id: string, payment_intent: string, amount: number) =>
  w.agent('POST', '/v1/refunds', { request_id, payment_intent, amount }).then((r) => r.json());

describe('headroom for rule-approved refunds', () => {
  it('a hand refund in the window is not overlooked, even when the refund still fits', async () => {
    world = await buildAppWorld();
    const pi = await world.payment(10_000);
    beforeGateCheck(world, () => void world!.sandbox.handRefund(pi, 1_000));
    const answer = await post(world, 'hand', pi, 2_000);
    expect(answer.status).toBe('REFUSED:stale_premise');
    expect(world.sandbox.refunds(pi).map((r) => r.amount)).toEqual([1_000]);
  });

  it('a dispute opened in the window refuses the send', async () => {
    world = await buildAppWorld();
    const pi = await world.payment(10_000);
    beforeGateCheck(world, () => void world!.sandbox.openDispute(pi));
    const answer = await post(world, 'dispute', pi, 2_000);
    expect(answer.status).toBe('REFUSED:stale_premise');
    expect(world.sandbox.refunds(pi)).toEqual([]);
  });

  it('another Interlock refund in the window that leaves too little refuses the send (no over-refund, nothing Stripe refuses)', async () => {
    world = await buildAppWorld();
    const w = world;
    // A second server on the same journal and Stripe (this one holds the payment's turn).
    const other = await buildAppWorld({ dir: w.dir, sandbox: w.sandbox, clock: w.clock });
    try {
      const pi = await w.payment(6_000);
      beforeGateCheck(w, async () => {
        expect((await post(other, 'other', pi, 4_000)).status).toBe('COMMITTED');
      });
      const answer = await post(w, 'second', pi, 4_000);
      expect(answer.status).toBe('REFUSED:stale_premise');
      expect(w.sandbox.refunds(pi).map((r) => r.amount)).toEqual([4_000]);
    } finally {
      await other.close();
    }
  });

  it('a hand refund and a failed Interlock refund that cancel out in refunded_by_others are still caught by refunded_outside', async () => {
    world = await buildAppWorld();
    const w = world;
    const pi = await w.payment(5_000);
    // An Interlock refund is reserved while the facts are read (its send waits at Stripe) …
    w.sandbox.setFault({ on: 'refund_create', action: 'delay', delayMs: 300 });
    const first = post(w, 'pending', pi, 3_000);
    const firstId = w.services.inbox.effectIdOf({ id: 'pending', agent: 'support-bot', payment_intent: pi, amount: 3_000, flags: [] });
    while (!(await w.services.journal.entries(firstId)).some((e) => e.kind === 'DISPATCHED')) await new Promise((r) => setTimeout(r, 5));
    // … then, in the second refund's window, a hand refund of the same amount leaves Stripe
    // refusing the first: refunded_by_others is 3000 before and after, refunded_outside is not.
    // The window is just before the gate reads the reservations (the inbox's capture read them first).
    const journal = w.services.journal;
    const reservations = journal.reservations.bind(journal);
    let reads = 0;
    journal.reservations = async (key) => {
      reads += 1;
      if (reads === 2) {
        w.sandbox.handRefund(pi, 3_000);
        expect((await first).status).toBe('REFUSED:target_error');
      }
      return reservations(key);
    };
    const answer = await post(w, 'second', pi, 1_000);
    expect(answer.status).toBe('REFUSED:stale_premise');
    expect(answer.changes).toEqual([{ field: 'refunded_outside', was: 0, now: 3_000 }]);
    expect(w.sandbox.refunds(pi).map((r) => r.amount)).toEqual([3_000]);
  });
});
