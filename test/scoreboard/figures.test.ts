import { describe, expect, it } from 'vitest';
import { decisionTimes, roundShare } from '../../server/scoreboard/board-sum.ts';
import { computeScoreboard } from '../../server/scoreboard/figures.ts';
import { SimulatedCrash } from '../../server/gate/target.ts';
import { buildInboxWorld, HOUR_MS, type InboxWorld } from '../support/inbox-world.ts';

const S = 1_000;

async function allEntries(world: InboxWorld) {
  return (await world.journal.scan(0, 1_000_000)).map((s) => s.entry);
}

/** One hand refund, fired the first time the gate reads this order's facts. */
function handRefundOnFirstRead(world: InboxWorld, order: string, cents: number) {
  let fired = false;
  const previous = world.target.onTouch;
  world.target.onTouch = (o) => {
    previous?.(o);
    if (o === order && !fired) {
      fired = true;
      world.target.refundByHand(o, cents);
    }
  };
}

describe('scoreboard', () => {
  it('counts a scripted journal exactly (inbox §17.3)', async () => {
    // seed: test_scoreboard.py test_scoreboard_counts_a_scripted_journal
    const world = buildInboxWorld();
    const { inbox, clock, target } = world;
    const at = (seconds: number) => {
      clock.nowMs = 1_000 * S + seconds * S;
    };
    // 1. routine, cleared by policy, confirmed by Stripe.
    const routine = world.request(20);
    at(0);
    expect(await inbox.submit(routine)).toBe('COMMITTED');
    await world.journal.append('CONFIRMED', world.effectIdOf(routine), { via: 'webhook', event: 'evt_1', refund: 're_x', status: 'succeeded', amount: 20, payment_intent: 'pi_x', created: 1 });
    // 2. judgment, approved after 30 s (recorded, not sent).
    const judged = world.request(80);
    at(0);
    await inbox.submit(judged);
    at(30);
    expect(await inbox.approve(world.effectIdOf(judged), 'ana', { execute: false })).toBe('APPROVED');
    // 3. stale: approved after 30 s, the send finds a hand refund, back with still_fits, unanswered.
    const stale = world.request(80);
    at(0);
    await inbox.submit(stale);
    handRefundOnFirstRead(world, stale.order as string, 10);
    at(30);
    expect(await inbox.approve(world.effectIdOf(stale), 'ana')).toBe('REFUSED:stale_premise');
    // 4. crash on a service with no lookup: AMBIGUOUS, rejected by ops after 100 s.
    const crashed = world.request(20);
    at(0);
    target.injectFault('crash_after');
    Object.defineProperty(target, 'tier', { value: 3, configurable: true });
    Object.defineProperty(target, 'queryable', { value: false, configurable: true });
    await expect(inbox.submit(crashed)).rejects.toBeInstanceOf(SimulatedCrash);
    await inbox.reconcile(await inbox.options.gate.recover());
    Object.defineProperty(target, 'tier', { value: 1, configurable: true });
    Object.defineProperty(target, 'queryable', { value: true, configurable: true });
    at(100);
    expect(await inbox.reject(world.effectIdOf(crashed), 'ops')).toBe('REJECTED');
    // 5. SLA: moved up to fm at 4 h, approved by fm at 200 s past the 4 h... measured from the first escalation.
    const slow = world.request(90);
    at(0);
    await inbox.submit(slow);
    clock.nowMs = 1_000 * S + 4 * HOUR_MS;
    await inbox.tick();
    const slowId = world.effectIdOf(slow);
    clock.nowMs = 1_000 * S + 200 * S;
    // The wait is from the first escalation: move the clock back into place for a 200 s wait.
    const escalations = (await world.journal.entries(slowId)).filter((e) => e.kind === 'ESCALATED');
    expect(escalations).toHaveLength(2);
    clock.nowMs = (escalations[0]!.at_ms as number) + 200 * S;
    expect(await inbox.approve(slowId, 'fm')).toBe('COMMITTED');
    // 6. a refund_remaining repair accepted after 50 s; the child clears by policy.
    const repaired = world.request(40);
    target.orders.get(repaired.order as string)!.amountCents = 100;
    handRefundOnFirstRead(world, repaired.order as string, 70);
    at(0);
    expect(await inbox.submit(repaired)).toBe('REFUSED:stale_premise');
    at(50);
    expect(await inbox.repair(world.effectIdOf(repaired), 'ana', 0)).toBe('COMMITTED');
    // 7. flagged, rejected by risk after 10 s.
    const flagged = world.request(20, { flagged: true });
    at(0);
    await inbox.submit(flagged);
    at(10);
    expect(await inbox.reject(world.effectIdOf(flagged), 'rita')).toBe('REJECTED');
    // Another agent's chain on the same journal is not counted.
    await world.journal.append('PROPOSED', 'aaaaaaaaaaaa', { agent: 'someone-else', lease: null, premises: {}, effect: {} });

    const board = computeScoreboard(await allEntries(world), 'inbox');
    expect(board).toMatchObject({
      requests: 7,
      cleared_no_person: 1,
      cleared_verified: 1,
      no_person_share: 0.143,
      sent_after_person: 1,
      rejected: 2,
      closed_by_repair: 1,
      open: 1,
      escalated: 6,
      escalated_by_reason: { needs_judgment: 4, stale_premise: 2, ambiguous: 1 },
      stale_approvals_caught: 1,
      crash_to_person: 1,
      repairs_suggested: 2,
      repairs_accepted: 1,
      sla_breaches: 1,
      confirmed_by_target: 1,
      time_to_decision: { n: 6, median_ms: 40 * S, p90_ms: 200 * S, max_ms: 200 * S },
    });
  });

  it('cleared_verified counts only receipts that verify', async () => {
    // seed: test_scoreboard.py test_cleared_verified_counts_only_valid_receipts
    const world = buildInboxWorld();
    await world.inbox.submit(world.request(20));
    await world.inbox.submit(world.request(30));
    const entries = await allEntries(world);
    expect(computeScoreboard(entries, 'inbox')).toMatchObject({ cleared_no_person: 2, cleared_verified: 2 });
    const tampered = entries.map((e) => (e.kind === 'DISPATCHED' && (e.effect as { amount: number }).amount === 30 ? { ...e, effect: { ...(e.effect as object), amount: 3_000 } } : e));
    // Altered entries never come out of a journal read (it fails closed), so only a re-hash finds them here.
    expect(computeScoreboard(tampered, 'inbox', { rehash: true })).toMatchObject({ cleared_no_person: 2, cleared_verified: 1 });
  });

  it('time to decision uses the application clock, never the wall clock', () => {
    // seed: test_scoreboard.py test_time_to_decision_uses_at_not_ts
    expect(decisionTimes([5 * S, 300 * S])).toEqual({ n: 2, median_ms: 152.5 * S, p90_ms: 300 * S, max_ms: 300 * S });
  });

  it('an empty journal has zero figures and null times', () => {
    // seed: test_scoreboard.py test_empty_and_pre_feature_journals
    expect(computeScoreboard([], 'inbox')).toMatchObject({ requests: 0, no_person_share: 0, time_to_decision: { n: 0, median_ms: null } });
  });

  it('rounds the share half to even, as the published figures were', () => {
    expect(roundShare(65 / 95)).toBe(0.684);
    expect(roundShare(1 / 7)).toBe(0.143);
    expect(roundShare(0.0005)).toBe(0);
  });
});
