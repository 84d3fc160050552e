import { describe, expect, it } from 'vitest';
import { DAY, DAY_SYSTEMS, DayPayments, type DayRequest, dayFromSeed, KINDS, uniqueRequests } from '../../experiments/approval-inbox-day.ts';
import { runApprovalInbox } from '../../experiments/approval-inbox.ts';
import { formatWhole, minutes } from '../../experiments/approval-inbox-report.ts';
import { SimulatedCrash } from '../../server/gate/target.ts';

/** The seed page's approval_inbox table and the published scoreboard (inbox §20.6). */
const PUBLISHED_SYSTEMS = {
  'everyone approves': { reviews: 100, wrong: 10 },
  'rules only': { reviews: 25, wrong: 10 },
  'rules + Interlock': { reviews: 36, wrong: 0 },
} as const;

const result = await runApprovalInbox();
const board = result.interlock.scoreboard;

describe('approval_inbox: the synthetic day (inbox §20)', () => {
  it('the mix: 100 deliveries of 95 requests, in the published proportions, numbered at creation', () => {
    const day = dayFromSeed();
    const counts = Object.fromEntries(KINDS.map((k) => [k, day.filter((r) => r.kind === k).length]));
    expect(counts).toEqual({ routine: 60, over_limit: 15, flagged: 5, ineligible: 5, crash: 5, refunded_by_hand: 5, duplicate: 5 });
    expect(uniqueRequests(day)).toHaveLength(95);
    for (const r of day) expect(r.order).toBe(r.id.replace('req', 'ord'));
    const overLimit = day.filter((r) => r.kind === 'over_limit').sort((a, b) => a.id.localeCompare(b.id));
    expect(overLimit.map((r) => r.by_hand)).toEqual(overLimit.map((r, i) => (i < 3 ? r.amount : i < 5 ? Math.floor(r.amount / 3) : 0)));
  });

  it('the day is the one CPython draws: the two partial hand refunds are 275 (over 200) and 165', () => {
    // Which repair child needs a second group (36, not 35 or 37) depends on these two draws.
    const partial = dayFromSeed().filter((r) => r.kind === 'over_limit' && r.by_hand > 0 && r.by_hand < r.amount);
    expect(partial.map((r) => r.amount).sort()).toEqual([165, 275]);
  });

  it('the world: a hand refund lands on the first premise check, never on a capture; a crash order crashes once', async () => {
    const base = { flagged: false, ineligible: false, crash: false, kind: 'refunded_by_hand' } as const;
    const hand: DayRequest = { ...base, id: 'req-001', order: 'ord-001', amount: 10, by_hand: 10 };
    const crash: DayRequest = { ...base, kind: 'crash', id: 'req-002', order: 'ord-002', amount: 10, by_hand: 0, crash: true };
    const target = new DayPayments([hand, crash]);
    expect(target.capture('ord-001').refunded).toBe(0);
    const facts = target.capture('ord-001');
    expect((await target.explain(facts, 'e1', { order: 'ord-001', amount: 10 })).violations).toHaveLength(1);
    expect(target.refundedTotal('ord-001')).toBe(10);
    await expect(target.apply('e2', { order: 'ord-002', amount: 10 })).rejects.toBeInstanceOf(SimulatedCrash);
    expect(await target.apply('e2', { order: 'ord-002', amount: 10 })).toEqual({ status: 'already_processed' });
    expect(target.refundedTotal('ord-002')).toBe(10);
  });

  it.each(DAY_SYSTEMS.map((s) => [s]))('%s: reviews and wrong amounts equal the published ones', (system) => {
    expect(result.systems[system]).toEqual(PUBLISHED_SYSTEMS[system]);
  });

  it('65 of 95 cleared with no person, 65 receipts verify, share 0.684', () => {
    expect([board.cleared_no_person, board.requests, board.cleared_verified, board.no_person_share]).toEqual([65, 95, 65, 0.684]);
  });

  it('the published scoreboard, figure by figure', () => {
    expect({
      requests: board.requests,
      cleared_no_person: board.cleared_no_person,
      cleared_verified: board.cleared_verified,
      no_person_share: board.no_person_share,
      sent_after_person: board.sent_after_person,
      escalated: board.escalated,
      rejected: board.rejected,
      stale_approvals_caught: board.stale_approvals_caught,
      crash_to_person: board.crash_to_person,
      repairs_suggested: board.repairs_suggested,
      repairs_accepted: board.repairs_accepted,
      sla_breaches: board.sla_breaches,
      open: board.open,
    }).toEqual({
      requests: 95,
      cleared_no_person: 65,
      cleared_verified: 65,
      no_person_share: 0.684,
      sent_after_person: 12,
      escalated: 32,
      rejected: 18,
      stale_approvals_caught: 5,
      crash_to_person: 0,
      repairs_suggested: 7,
      repairs_accepted: 2,
      sla_breaches: 3,
      open: 0,
    });
  });

  it('time to decision median / p90 / max is 104 / 302 / 409 min, printed as Python prints them', () => {
    const t = board.time_to_decision;
    expect([minutes(t.median_ms), minutes(t.p90_ms), minutes(t.max_ms)]).toEqual(['104', '302', '409']);
    expect(t.n).toBe(36);
  });

  it('36 reviews = 26 judgment calls (one a repair child routed to another group) + 10 stale approvals', () => {
    expect(result.interlock.reviewsByReason).toEqual({ needs_judgment: 26, stale_premise: 10 });
    expect(result.interlock.repairReviews).toBe(1);
    expect(board.escalated_by_reason).toEqual({ needs_judgment: 27, stale_premise: 10 });
  });

  it('the scoreboard of the synthetic day is consistent', () => {
    // seed: test_scoreboard.py test_synthetic_day_scoreboard_is_consistent
    expect(result.systems['rules + Interlock'].wrong).toBe(0);
    expect(board.repairs_accepted).toBe(DAY.partialByHand);
    expect(board.requests).toBe(result.uniqueIds);
    expect(board.sla_breaches).toBeGreaterThan(0);
  });

  it('whole minutes round an exact half to even, as "{:.0f}" does', () => {
    expect([0.5, 1.5, 2.5, 103.5, 104.5, 103.9, 301.8, 408.7].map(formatWhole)).toEqual(['0', '2', '2', '104', '104', '104', '302', '409']);
    expect(minutes(null)).toBe('-');
  });
});
