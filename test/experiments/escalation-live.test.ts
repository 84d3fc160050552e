import { describe, expect, it } from 'vitest';
import { runEscalationLive } from '../../experiments/escalation-live.ts';

const run = await runEscalationLive();
const step = (name: string) => run.steps.find((s) => s.step === name)?.detail ?? '';

describe('escalation_live: the escalation story against the sandbox (inbox §22)', () => {
  it('queues the over-limit request for ap-leads with the failed rule', () => {
    expect(step('request')).toContain('status=QUEUED, reason=needs_judgment, detail=["amount at most 1000 cents"], group=ap-leads');
  });

  it('refuses the stale send with the change and still_fits, and the repair sends once', () => {
    expect(step('send')).toContain('status=REFUSED:stale_premise');
    expect(step('send')).toContain('{"field":"refunded_by_others","now":3000,"was":0}');
    expect(step('send')).toContain('["still_fits"]');
    expect(step('repair accepted')).toContain('status=COMMITTED');
  });

  it('moves the second request up the chain at the SLA and only the new group may decide', () => {
    expect(step('second request')).toContain('refunded_by_others=8000');
    expect(step('sla tick')).toContain('group=finance-manager, level=1, breach=true, due=first due + 4 h');
    expect(step('ap-leads after breach')).toContain('REFUSED:lease');
    expect(step('approved by fm')).toContain('COMMITTED');
  });

  it('ends with 9500 cents refunded, both receipts valid, webhooks confirming our refunds only', () => {
    expect(run.totalRefundedCents).toBe(9_500);
    expect(run.receiptsValid).toEqual([true, true]);
    expect(run.deliveries.filter((d) => d.refund === 're_1').every((d) => d.result === 'IGNORED:unknown_effect')).toBe(true);
    expect(run.deliveries.filter((d) => d.refund !== 're_1').every((d) => d.result === 'CONFIRMED')).toBe(true);
  });

  it('scores the run as published, the approval on the facts now counted as one and not as a repair', () => {
    expect(run.scoreboard).toMatchObject({
      requests: 2,
      cleared_no_person: 0,
      sent_after_person: 2,
      escalated: 2,
      stale_approvals_caught: 1,
      repairs_suggested: 1,
      repairs_accepted: 0,
      approved_on_facts_now: 1,
      sla_breaches: 1,
      confirmed_by_target: 2,
      escalated_by_reason: { needs_judgment: 2, stale_premise: 1 },
      time_to_decision: { n: 3, median_ms: 1_200_000, p90_ms: 15_360_000, max_ms: 15_360_000 },
    });
  });
});
