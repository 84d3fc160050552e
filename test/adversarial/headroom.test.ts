import { afterEach, describe, expect, it } from 'vitest';
import type { JsonObject } from '../../shared/json.ts';
import { limits } from '../../shared/limits.ts';
import { AppClock } from '../../server/app/clock.ts';
import { type AppWorld, buildAppWorld } from '../support/app-world.ts';

// Adversarial review of the "headroom" a rule-approved refund gets (stripe-refunds.ts explain):
// only refunds Interlock itself made or reserved may move the facts between the rules' read and
// the gate's check. Each attack below changes the world in exactly that window (the inbox has
// read the facts and the rules passed; the gate is about to check them before the DISPATCHED).
// The rules' read stands for the gate's while it is at most `limits.factsReuseMs` old and no
// dispatch on the payment came since (the guard on the journal position read before it): so an
// Interlock refund in the window always means a new read, and a change made outside Interlock is
// caught by a read once those seconds have passed (the attacks below let them pass); within them,
// it is the bound the contract states (docs/agents/http-api.md).

/** A wall clock that runs with real time and can be moved forward. */
function movableWall() {
  let offsetMs = 0;
  return {
    now: () => Date.now() + offsetMs,
    advance: (ms: number) => {
      offsetMs += ms;
    },
  };
}

/** A world whose wall clock the attack moves past the facts' reuse, so the gate reads again. */
async function worldPastReuse(): Promise<{ w: AppWorld; pastReuse: () => void }> {
  const wall = movableWall();
  const w = await buildAppWorld({ clock: new AppClock(wall.now) });
  return { w, pastReuse: () => wall.advance(limits.factsReuseMs + 1) };
}

let world: AppWorld | undefined;
afterEach(async () => {
  await world?.close();
  world = undefined;
});

/**
 * Run `between` once, just before the gate's own facts check of the next refund: a read of its
 * own (`explain`), or the rules' read reused (`judgeOn`); either way, before the DISPATCHED.
 */
function beforeGateCheck(w: AppWorld, between: (premises: JsonObject) => Promise<void> | void): void {
  const target = w.services.target;
  const explain = target.explain.bind(target);
  let pending: Promise<void> | null = null;
  let done = false;
  const once = async (premises: JsonObject) => {
    if (done) return;
    done = true;
    await between(premises);
  };
  target.explain = async (premises, effectId, effect, options) => {
    await once(premises as JsonObject);
    return explain(premises, effectId, effect, options);
  };
  // judgeOn is not awaited by the gate: the attack finishes at the gate's next stop before the
  // DISPATCHED (its before_dispatch point), still ahead of the freshness check and the guarded write.
  const judgeOn = target.judgeOn.bind(target);
  target.judgeOn = (premises, now, effect, options) => {
    if (!done) pending = once(premises as JsonObject);
    return judgeOn(premises, now, effect, options);
  };
  const { gate } = w.services;
  const hook = gate.killHook;
  gate.killHook = async (point, effectId) => {
    if (point === 'before_dispatch' && pending) {
      const attack = pending;
      pending = null;
      await attack;
    }
    await hook?.(point, effectId);
  };
}

const post = (w: AppWorld, request_id: string, payment_intent: string, amount: number) =>
  w.agent('POST', '/v1/refunds', { request_id, payment_intent, amount }).then((r) => r.json());

describe('headroom for rule-approved refunds', () => {
  it('a hand refund in the window is not overlooked, even when the refund still fits', async () => {
    const { w, pastReuse } = await worldPastReuse();
    world = w;
    const pi = await world.payment(10_000);
    beforeGateCheck(world, () => {
      world!.sandbox.handRefund(pi, 1_000);
      pastReuse();
    });
    const answer = await post(world, 'hand', pi, 2_000);
    expect(answer.status).toBe('REFUSED:stale_premise');
    expect(world.sandbox.refunds(pi).map((r) => r.amount)).toEqual([1_000]);
  });

  it('a dispute opened in the window refuses the send', async () => {
    const { w, pastReuse } = await worldPastReuse();
    world = w;
    const pi = await world.payment(10_000);
    beforeGateCheck(world, () => {
      world!.sandbox.openDispute(pi);
      pastReuse();
    });
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
    const past = await worldPastReuse();
    world = past.w;
    const w = world;
    const pi = await w.payment(5_000);
    // An Interlock refund is reserved while the facts are read (its send waits at Stripe) …
    w.sandbox.setFault({ on: 'refund_create', action: 'delay', delayMs: 300 });
    const first = post(w, 'pending', pi, 3_000);
    const firstId = w.services.inbox.effectIdOf({ id: 'pending', agent: 'support-bot', payment_intent: pi, amount: 3_000, flags: [] });
    while (!(await w.services.journal.entries(firstId)).some((e) => e.kind === 'DISPATCHED')) await new Promise((r) => setTimeout(r, 5));
    // … then, in the second refund's window, a hand refund of the same amount leaves Stripe
    // refusing the first: refunded_by_others is 3000 before and after, refunded_outside is not.
    beforeGateCheck(w, async () => {
      w.sandbox.handRefund(pi, 3_000);
      expect((await first).status).toBe('REFUSED:target_error');
      past.pastReuse();
    });
    const answer = await post(w, 'second', pi, 1_000);
    expect(answer.status).toBe('REFUSED:stale_premise');
    expect(answer.changes).toEqual([{ field: 'refunded_outside', was: 0, now: 3_000 }]);
    expect(w.sandbox.refunds(pi).map((r) => r.amount)).toEqual([3_000]);
  });
  it('within the reuse window the rules’ read is the check: a hand refund then is not read again, and Stripe is never asked for more than is left', async () => {
    world = await buildAppWorld();
    const pi = await world.payment(10_000);
    let reads = 0;
    const explain = world.services.target.explain.bind(world.services.target);
    world.services.target.explain = async (...args) => {
      reads += 1;
      return explain(...args);
    };
    beforeGateCheck(world, () => void world!.sandbox.handRefund(pi, 1_000));
    const answer = await post(world, 'reused', pi, 2_000);
    // The bound the contract states: a change outside Interlock in those two seconds is not seen.
    expect(answer.status).toBe('COMMITTED');
    expect(reads).toBe(0);
    expect(world.sandbox.refunds(pi).map((r) => r.amount).sort()).toEqual([1_000, 2_000]);
  });
});
