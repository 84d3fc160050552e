import { afterEach, describe, expect, it } from 'vitest';
import type { PersonLease } from '../../shared/entries.ts';
import type { KillPoint } from '../../server/gate/kill-points.ts';
import { type AppWorld, buildAppWorld } from '../support/app-world.ts';

// Adversarial review: the gate checks the lease once, at the top of submit, and then waits for the
// payment's turn (KeyedTurns) and may check the facts up to 20 times (the reservation guard)
// before it writes the DISPATCHED; the lease is never looked at again. Invariant 2 (DESIGN.md):
// nothing is sent without a DISPATCHED written "under a lease that was live at that moment".
//
// Here a routine refund A on the same payment holds the payment's turn while its facts are read
// (the `before_dispatch` hook stands for a slow Stripe read; it then fails, so A writes no
// DISPATCHED and leaves B's facts as they were). A person's approval of B is executed meanwhile:
// its lease is live when checked, then B waits for the turn; the approval expires while it waits
// (approval_max_age_minutes: 240). B is then dispatched and sent under an expired approval, and
// its DISPATCHED records `lease_live: true`.

const MINUTE = 60_000;
let world: AppWorld | undefined;
afterEach(async () => {
  await world?.close();
  world = undefined;
});

async function until(what: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 2_000; i++) {
    if (await what()) return;
    await new Promise((r) => setTimeout(r, 2));
  }
  throw new Error('timed out waiting');
}

describe('a lease checked before the payment’s turn', () => {
  it('an approval that expires while its send waits for the payment’s turn is not sent', async () => {
    world = await buildAppWorld();
    const w = world;
    const pi = await w.payment(10_000);
    const b = (await w.agent('POST', '/v1/refunds', { request_id: 'needs-a-person', payment_intent: pi, amount: 8_000 })).json();
    expect(b.status).toBe('QUEUED');

    // A routine refund on the same payment takes the turn and is slow inside it.
    const aId = w.services.inbox.effectIdOf({ id: 'routine', agent: 'support-bot', payment_intent: pi, amount: 1_000, flags: [] });
    let inTurn = false;
    let giveUp!: (error: Error) => void;
    const slow = new Promise<void>((_resolve, reject) => {
      giveUp = reject;
    });
    w.services.gate.killHook = async (point: KillPoint, effectId: string) => {
      if (point === 'before_dispatch' && effectId === aId) {
        inTurn = true;
        await slow;
      }
    };
    const a = w.agent('POST', '/v1/refunds', { request_id: 'routine', payment_intent: pi, amount: 1_000 });
    await until(async () => inTurn);

    // Ana approves B now: her approval is live when the gate checks it, then B waits for the turn.
    const ana = await w.login('ana');
    const item = (await w.as(ana, 'GET', `/api/items/${b.effect_id}`)).json();
    const decision = w.as(ana, 'POST', `/api/items/${b.effect_id}/decisions`, { action: 'approve', escalation: item.item.escalation });
    await until(async () => {
      const chain = await w.services.journal.entries(b.effect_id);
      const decided = chain.findIndex((e) => e.kind === 'DECIDED');
      return decided >= 0 && chain.slice(decided).some((e) => e.kind === 'AUTHORIZED');
    });

    // The approval expires while B waits; then A's slow read fails and the turn passes to B.
    w.clock.advance(241 * MINUTE);
    giveUp(new Error('Stripe read timed out'));
    await a;
    const answer = (await decision).json();

    // Today: [8000] was sent, and the answer is COMMITTED.
    expect(w.sandbox.refunds(pi).map((r) => r.amount)).toEqual([]);
    expect(answer.status).not.toBe('COMMITTED');
    const chain = await w.services.journal.entries(b.effect_id);
    const dispatched = chain.find((e) => e.kind === 'DISPATCHED');
    if (dispatched?.kind === 'DISPATCHED') {
      // What the authority says of that lease at the moment the DISPATCHED was written.
      expect(w.services.authority.problem(dispatched.lease as PersonLease)).toBeNull();
    }
  });
});
