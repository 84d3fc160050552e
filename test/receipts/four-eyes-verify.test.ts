import { describe, expect, it } from 'vitest';
import type { Entry } from '../../shared/entries.ts';
import type { JsonObject } from '../../shared/json.ts';
import { describeReport } from '../../server/mcp/words.ts';
import { verifyCheckedChain, verifyReceipt } from '../../server/receipts/verify.ts';
import { receiptSubject } from '../../shared/receipts/subject.ts';
import { provenSentence } from '../../web/src/components/VerifyReportView.tsx';
import { buildChain, decidedFields, EFFECT_ID, escalatedFields, liveChecks, PREMISES, personLease, REFUND, refundResult, type Step } from '../support/entries.ts';

// npm run verify and the journal's own check hold a two-approver escalation to its count: the
// send carries two distinct recorded approvals of it, and the report names both approvers.

const LATER_MS = 120_000;
/** A two-approver refund: escalated, approved by `first` then `second`, sent under `lease`. */
function steps(first: string, second: string, co: JsonObject[] | undefined): Step[] {
  const lease = (sealed: readonly Entry[]) =>
    personLease(sealed, { by: second, at_ms: 1_700_000_000_000 + LATER_MS, ...(co === undefined ? {} : { co_approvals: co }) });
  return [
    ['PROPOSED', { agent: 'refund-bot', lease: null, premises: PREMISES, effect: REFUND }],
    ['ESCALATED', escalatedFields({ approvals_required: 2 })],
    ['DECIDED', decidedFields({ by: first })],
    ['DECIDED', decidedFields({ by: second, at_ms: 1_700_000_000_000 + LATER_MS })],
    ['PROPOSED', (sealed) => ({ agent: 'refund-bot', lease: lease(sealed), premises: PREMISES, effect: REFUND })],
    ['AUTHORIZED', (sealed) => ({ lease: lease(sealed) })],
    ['DISPATCHED', (sealed) => ({ effect: REFUND, lease: lease(sealed), premises: PREMISES, checks: liveChecks() })],
    ['COMMITTED', { result: refundResult() }],
  ];
}
const firstApproval = { by: 'ann', at_ms: 1_700_000_060_000 };

describe('verify: a two-approver escalation', () => {
  it.each([
    ['two distinct approvals, both in the lease', 'ann', 'bob', [firstApproval], [], true],
    ['the lease carries the second approval only', 'ann', 'bob', undefined, ['approvals_short'], false],
    ['the lease names an approval never recorded', 'ann', 'bob', [{ by: 'cy', at_ms: 1 }], ['approvals_short'], false],
    ['one person approved twice', 'ann', 'ann', [firstApproval], ['decided_twice', 'approvals_short'], false],
  ] as const)('%s', async (_name, first, second, co, problems, valid) => {
    const entries = buildChain(EFFECT_ID, steps(first, second, co === undefined ? undefined : [...co]));
    const report = await verifyReceipt({ effect_id: EFFECT_ID, entries: [...entries] });
    expect(report.problems.map((p) => p.code).filter((c) => c !== 'lease_not_attested' && c !== 'decision_mismatch')).toEqual(problems);
    expect(report.valid).toBe(valid);
    expect(verifyCheckedChain(EFFECT_ID, entries as unknown as JsonObject[])).toBe(valid);
    if (valid) expect(report).toMatchObject({ approved_by: 'bob', approvers: ['ann', 'bob'] });
  });
});

describe('verify: a tampered two-approver receipt carrying one approval', () => {
  it('a send on the first approval alone (no second recorded) is refused, however its lease reads', async () => {
    const lease = (sealed: readonly Entry[]) => personLease(sealed, { by: 'ann', at_ms: 1_700_000_000_000 });
    const entries = buildChain(EFFECT_ID, [
      ['PROPOSED', { agent: 'refund-bot', lease: null, premises: PREMISES, effect: REFUND }],
      ['ESCALATED', escalatedFields({ approvals_required: 2 })],
      ['DECIDED', decidedFields({ by: 'ann' })],
      ['PROPOSED', (sealed) => ({ agent: 'refund-bot', lease: lease(sealed), premises: PREMISES, effect: REFUND })],
      ['AUTHORIZED', (sealed) => ({ lease: lease(sealed) })],
      ['DISPATCHED', (sealed) => ({ effect: REFUND, lease: lease(sealed), premises: PREMISES, checks: liveChecks() })],
      ['COMMITTED', { result: refundResult() }],
    ]);
    const report = await verifyReceipt({ effect_id: EFFECT_ID, entries: [...entries] });
    expect(report.valid).toBe(false);
    expect(report.problems.map((p) => p.code)).toContain('approvals_short');
    expect(verifyCheckedChain(EFFECT_ID, entries as unknown as JsonObject[])).toBe(false);
  });
});

describe('a two-approver receipt names both approvers wherever it is read', () => {
  it('the Verify page, the item page and the MCP tool say both, the earlier first', async () => {
    const entries = buildChain(EFFECT_ID, steps('ann', 'bob', [firstApproval]));
    const report = await verifyReceipt({ effect_id: EFFECT_ID, entries: [...entries] });
    const nameOf = (login: string) => ({ ann: 'Ann Lee', bob: 'Bob Ode' })[login] ?? null;
    expect(provenSentence(report, receiptSubject(entries as unknown as JsonObject[]), nameOf)).toContain('approved by Ann Lee (ann) and Bob Ode (bob)');
    expect(describeReport(report)).toContain('approved by ann and bob');
  });
});
