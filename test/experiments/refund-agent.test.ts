import { describe, expect, it } from 'vitest';
import { FAULTS, renderCell, runRefundAgent, SYSTEMS } from '../../experiments/refund-agent.ts';

/** The seed page's refund_agent table, cell for cell (seed: interlock-tests-and-experiments.txt, refund_agent). */
const PUBLISHED = `
happy_path	APPLIED $20 held	APPLIED:ok $20 held	COMPLETED:ok $20 held	COMMITTED $20 held	COMMITTED $20 held	COMMITTED $20 held
crash_before_send	RETRIED $20 held	RETRIED $20 held	RERUN:ok $20 held	COMMITTED_BY_RETRY $20 held	REAPPLIED_AFTER_QUERY $20 held	AMBIGUOUS $0 held, availability lost
crash_before_ack	RETRIED $40 VIOLATED	RETRIED $20 held	RERUN:already_processed $20 held	COMMITTED_BY_RETRY $20 held	COMMITTED_ON_QUERY $20 held	AMBIGUOUS $20 held, availability lost
duplicate_submit	APPLIED $40 VIOLATED	APPLIED:already_processed $20 held	REPLAYED:ok $20 held	DUPLICATE_IGNORED $20 held	DUPLICATE_IGNORED $20 held	DUPLICATE_IGNORED $20 held
model_redecides	APPLIED $50 VIOLATED	APPLIED:key_reused_with_different_params $20 held	REPLAYED:RERUN:already_processed $20 held	REFUSED:conflicting_payload $20 held	REFUSED:conflicting_payload $20 held	REFUSED:conflicting_payload $20 held
conflicting_payload	APPLIED $50 VIOLATED	APPLIED:key_reused_with_different_params $20 held	REPLAYED:ok $20 held	REFUSED:conflicting_payload $20 held	REFUSED:conflicting_payload $20 held	REFUSED:conflicting_payload $20 held
lease_revoked	APPLIED $20 VIOLATED	APPLIED:ok $20 VIOLATED	COMPLETED:ok $20 VIOLATED	REFUSED:lease $0 held	REFUSED:lease $0 held	REFUSED:lease $0 held
stale_eligibility	APPLIED $20 VIOLATED	APPLIED:ok $20 VIOLATED	COMPLETED:ok $20 VIOLATED	REFUSED:stale_premise $0 held	REFUSED:stale_premise $0 held	REFUSED:stale_premise $0 held
refund_during_outage	RETRIED $40 VIOLATED	RETRIED $40 VIOLATED	RERUN:ok $40 VIOLATED	REFUSED:stale_premise_at_recovery $20 held	REFUSED:stale_premise_at_recovery $20 held	AMBIGUOUS $20 held, availability lost
lease_revoked_during_outage	RETRIED $20 VIOLATED	RETRIED $20 VIOLATED	RERUN:ok $20 VIOLATED	REFUSED:lease_at_recovery $0 held	REFUSED:lease_at_recovery $0 held	AMBIGUOUS $0 held, availability lost
key_expired	RETRIED $40 VIOLATED	RETRIED $40 VIOLATED	RERUN:ok $40 VIOLATED	COMMITTED_ON_QUERY $20 held	COMMITTED_ON_QUERY $20 held	AMBIGUOUS $20 held, availability lost
`
  .trim()
  .split('\n')
  .map((line) => line.split('\t'));

const table = await runRefundAgent();

describe('refund_agent experiment', () => {
  it.each(PUBLISHED.map((row) => [row[0]!, row]))('fault %s: every cell equals the published one', (fault, row) => {
    const ours = SYSTEMS.map((s) => renderCell(table[fault as (typeof FAULTS)[number]][s]));
    expect(ours).toEqual(row.slice(1));
  });

  it('the gate holds every refund fault at every tier', () => {
    // seed: test_interlock.py test_gate_holds_every_refund_fault_at_every_tier
    for (const fault of FAULTS) for (const s of ['gate@tier1', 'gate@tier2', 'gate@tier3'] as const) expect(table[fault][s].held).toBe(true);
  });

  it('only tier 3 gives up liveness', () => {
    // seed: test_interlock.py test_only_tier3_gives_up_liveness
    const lost = FAULTS.flatMap((f) => SYSTEMS.filter((s) => table[f][s].availabilityLost).map((s) => s));
    expect(new Set(lost)).toEqual(new Set(['gate@tier3']));
  });

  it('each baseline fails exactly where the published table says', () => {
    // seed: test_interlock.py test_each_baseline_fails_exactly_where_the_readme_says
    const failing = (s: (typeof SYSTEMS)[number]) => FAULTS.filter((f) => !table[f][s].held);
    expect(failing('naive')).toEqual(FAULTS.filter((f) => f !== 'happy_path' && f !== 'crash_before_send'));
    const outage = ['lease_revoked', 'stale_eligibility', 'refund_during_outage', 'lease_revoked_during_outage', 'key_expired'];
    expect(failing('idempotency@tier1')).toEqual(outage);
    expect(failing('durable@tier1')).toEqual(outage);
  });
});
