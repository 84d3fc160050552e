import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Escalated } from '../../shared/entries.ts';
import { computeScoreboard } from '../../server/scoreboard/figures.ts';
import { type AppWorld, buildAppWorld, fastForwardScheduler, testConfig } from '../support/app-world.ts';

// The payment moves under an open item nobody decided (a refund by hand in the dashboard, a
// dispute): the display cache notices, and the inbox shows the item again on facts it reads
// itself, with the repair that fits, so nobody has to approve and be refused to get the repair.
// Same group, level and deadline; the same trip to a person, so no figure of the scoreboard moves.

const HOUR = 3_600_000;

let world: AppWorld;
beforeAll(async () => {
  // Every ap-leads member has an email channel, so a message nobody should get would be journaled.
  const config = testConfig();
  world = await buildAppWorld({
    // What is shown again, not how fast: the cache's 1.5 s between reads is skipped, not waited for.
    factsScheduler: fastForwardScheduler(),
    config: {
      ...config,
      notifications: {
        ...config.notifications,
        people: { ...config.notifications.people, ana: [{ kind: 'email', to: 'ana@example.com' }], bea: [{ kind: 'email', to: 'bea@example.com' }] },
      },
    },
  });
});
afterAll(async () => world.close());

async function queued(requestId: string, amountCents = 8_000, paymentCents = 10_000) {
  const pi = await world.payment(paymentCents);
  const posted = await world.agent('POST', '/v1/refunds', { request_id: requestId, payment_intent: pi, amount: amountCents });
  expect(posted.json().status).toBe('QUEUED');
  const effectId = posted.json().effect_id as string;
  await settled();
  return { pi, effectId };
}

/** The views caught up, and the display cache (with any re-show it queued) done. */
async function settled(): Promise<void> {
  await world.services.views.current();
  await world.services.currentFacts.idle();
  await world.services.views.current();
}

/** A verified Stripe event named the payment (what the webhook route does), and everything it causes is done. */
async function stripeSays(pi: string): Promise<void> {
  world.services.onPaymentEvent(pi);
  await settled();
}

async function escalations(effectId: string): Promise<Escalated[]> {
  return (await world.services.journal.entries(effectId)).filter((e): e is Escalated => e.kind === 'ESCALATED');
}

async function scoreboardNow() {
  return computeScoreboard(
    (await world.services.journal.scan(0, 1_000_000)).map((row) => row.entry),
    world.services.config.inboxName,
  );
}

describe('an open item whose payment moved is shown again on new facts', () => {
  it('a hand refund: shown again with "refund what is left", at the same group, level and deadline, once; the repair sends exactly what is left', async () => {
    const { pi, effectId } = await queued('reshow-hand');
    const [first] = await escalations(effectId);
    const boardBefore = await scoreboardNow();
    await world.services.outbox.plan();
    const toldBefore = (await (await world.services.views.current()).outbox.history.messagesAbout(effectId)).map((m) => m.id);
    expect(toldBefore.length).toBeGreaterThan(0);

    // The clock moves on: the re-show must not restart the SLA clock.
    world.clock.advance(HOUR);
    world.sandbox.handRefund(pi, 3_000);
    await stripeSays(pi);

    const all = await escalations(effectId);
    expect(all).toHaveLength(2);
    const reshown = all[1]!;
    expect(reshown).toMatchObject({
      reason: first!.reason,
      group: first!.group,
      level: first!.level,
      due_ms: first!.due_ms,
      route: first!.route,
      breach: false,
      facts: { refunded_by_others: 3_000, refunded_outside: 3_000, amount_received: 10_000 },
      changes: [
        { field: 'refunded_by_others', was: 0, now: 3_000 },
        { field: 'refunded_outside', was: 0, now: 3_000 },
      ],
      repairs: [{ code: 'refund_remaining', set: { amount: 7_000 } }],
    });
    expect(reshown.at_ms).toBeGreaterThanOrEqual(first!.at_ms + HOUR);
    // The same trip to a person: not a new escalation, breach or suggestion in any figure.
    expect(await scoreboardNow()).toEqual(boardBefore);
    // Nobody is told again: the item is in their queue already, re-shown live, and its deadline is unchanged.
    await world.services.outbox.plan();
    expect((await (await world.services.views.current()).outbox.history.messagesAbout(effectId)).map((m) => m.id)).toEqual(toldBefore);

    // Read again with nothing new: never shown a second time, by the cache or by the inbox itself.
    await world.services.currentFacts.refresh(effectId);
    await stripeSays(pi);
    expect(await world.services.inbox.reshowOnNewFacts(effectId)).toBeNull();
    expect(await escalations(effectId)).toHaveLength(2);

    // The item page offers it; accepting it sends exactly what is left, once.
    const ana = await world.login('ana');
    const page = (await world.as(ana, 'GET', `/api/items/${effectId}`)).json();
    expect(page.item).toMatchObject({ escalation: reshown.hash, repairs: [{ code: 'refund_remaining' }], due_ms: first!.due_ms });
    const repaired = (await world.as(ana, 'POST', `/api/items/${effectId}/decisions`, { action: 'repair', escalation: reshown.hash, repair_index: 0 })).json();
    expect(repaired.status).toBe('COMMITTED');
    expect(world.sandbox.refunds(pi).map((r) => r.amount).sort((a, b) => a - b)).toEqual([3_000, 7_000]);
  });

  it('a second change is a second re-show; a change that still fits offers the same amount on the new facts', async () => {
    const { pi, effectId } = await queued('reshow-twice', 6_000, 10_000);
    world.sandbox.handRefund(pi, 1_000);
    await stripeSays(pi);
    expect((await escalations(effectId)).at(-1)).toMatchObject({ repairs: [{ code: 'still_fits', set: {} }], facts: { refunded_by_others: 1_000 } });
    world.sandbox.handRefund(pi, 6_000);
    await stripeSays(pi);
    const all = await escalations(effectId);
    expect(all).toHaveLength(3);
    // What changed is counted from the request, not from the re-show before.
    expect(all[2]).toMatchObject({
      facts: { refunded_by_others: 7_000 },
      changes: [{ field: 'refunded_by_others', was: 0, now: 7_000 }, { field: 'refunded_outside', was: 0, now: 7_000 }],
      repairs: [{ code: 'refund_remaining', set: { amount: 3_000 } }],
    });
  });

  it('a dispute: shown again as disputed, with no repair (no refund of a disputed payment is safe)', async () => {
    const { pi, effectId } = await queued('reshow-dispute');
    world.sandbox.openDispute(pi);
    await stripeSays(pi);
    expect((await escalations(effectId)).at(-1)).toMatchObject({ facts: { disputed: true }, changes: [{ field: 'disputed', was: false, now: true }], repairs: [] });
  });

  it('an approval racing the re-show on the escalation it replaced is SUPERSEDED, and nothing is sent on the old facts', async () => {
    const { pi, effectId } = await queued('reshow-race');
    const ana = await world.login('ana');
    const seen = (await world.as(ana, 'GET', `/api/items/${effectId}`)).json().item.escalation as string;
    world.sandbox.handRefund(pi, 3_000);
    await stripeSays(pi);
    const answer = (await world.as(ana, 'POST', `/api/items/${effectId}/decisions`, { action: 'approve', escalation: seen })).json();
    expect(answer.status).toBe('SUPERSEDED');
    expect(world.sandbox.refunds(pi).map((r) => r.amount)).toEqual([3_000]);
  });

  it('a decision that lands between the inbox reading Stripe and writing: the re-show is not written', async () => {
    const { pi, effectId } = await queued('reshow-decided-first');
    const ana = await world.login('ana');
    const seen = (await world.as(ana, 'GET', `/api/items/${effectId}`)).json().item.escalation as string;
    world.sandbox.handRefund(pi, 3_000);
    const capture = world.services.inbox.options.capture;
    const spy = vi.spyOn(world.services.inbox.options, 'capture').mockImplementationOnce(async (request) => {
      const facts = await capture(request);
      // ana rejects while the inbox reads: her decision is on the escalation the re-show would replace.
      const rejected = (await world.as(ana, 'POST', `/api/items/${effectId}/decisions`, { action: 'reject', escalation: seen, reason: 'Refunded by hand already' })).json();
      expect(rejected.status).toBe('REJECTED');
      return facts;
    });
    expect(await world.services.inbox.reshowOnNewFacts(effectId)).toBeNull();
    spy.mockRestore();
    expect(await escalations(effectId)).toHaveLength(1);
  });

  it('a breached item shown again still shows as breached, and is counted as one breach', async () => {
    const { pi, effectId } = await queued('reshow-breached');
    const [first] = await escalations(effectId);
    world.clock.advance(first!.due_ms! - world.clock.nowMs() + 1);
    await world.services.inbox.tick();
    await settled();
    const moved = (await escalations(effectId)).at(-1)!;
    expect(moved.breach).toBe(true);
    const boardBefore = await scoreboardNow();
    const breachedItem = (await world.services.views.current()).inbox.queue(new Set([moved.group])).find((i) => i.effect_id === effectId);
    expect(breachedItem).toMatchObject({ breach: true });

    world.sandbox.handRefund(pi, 3_000);
    await stripeSays(pi);
    const reshown = (await escalations(effectId)).at(-1)!;
    expect(reshown).toMatchObject({ breach: false, level: moved.level, group: moved.group, due_ms: moved.due_ms });
    const item = (await world.services.views.current()).inbox.queue(new Set([moved.group])).find((i) => i.effect_id === effectId);
    expect(item).toMatchObject({ escalation: reshown.hash, breach: true, missed_due_ms: breachedItem!.missed_due_ms, repairs: [{ code: 'refund_remaining' }] });
    expect(await scoreboardNow()).toEqual(boardBefore);
  });

  it('a failure to show it again is only logged; the next read that finds the payment moved tries again', async () => {
    const { pi, effectId } = await queued('reshow-fails');
    world.sandbox.handRefund(pi, 3_000);
    const spy = vi.spyOn(world.services.inbox, 'reshowOnNewFacts').mockRejectedValueOnce(new Error('Stripe is down'));
    const logged = vi.spyOn(world.app.log, 'error');
    await stripeSays(pi);
    expect(logged).toHaveBeenCalledWith(expect.objectContaining({ effectId }), expect.stringMatching(/could not be shown again/));
    expect(await escalations(effectId)).toHaveLength(1);
    await stripeSays(pi);
    spy.mockRestore();
    logged.mockRestore();
    expect(await escalations(effectId)).toHaveLength(2);
  });
});
