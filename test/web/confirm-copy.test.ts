import { describe, expect, it } from 'vitest';
import type { DecisionAnswer } from '../../shared/api.ts';
import { confirmCopy, type PendingDecision } from '../../web/src/components/ConfirmDialog.tsx';
import { finishedToast } from '../../web/src/next-item.ts';
import { arrivalText } from '../../web/src/use-arrival-toasts.ts';

// The words of a confirmation say what the click does: an approval that is the first of two sends
// nothing, so it never reads "Approve and send".

const base: PendingDecision = { action: 'approve', amountCents: 600_000, currency: 'usd', paymentIntent: 'pi_1', requestId: 'r-1' };
const sameOnNewFacts = { why: '$6,000.00 still fits', set: {} } as unknown as NonNullable<PendingDecision['repair']>;

describe('confirmCopy', () => {
  it.each([
    ['an approval that sends', { ...base }, 'Approve and send $6,000.00?', 'Send $6,000.00 refund'],
    ['the first approval of two', { ...base, firstOfTwo: true }, 'Approve $6,000.00 (1 of 2)?', 'Approve (1 of 2)'],
    ['the same refund on the new facts, sent', { ...base, action: 'repair' as const, repairIndex: 0, repair: sameOnNewFacts }, 'Approve and send $6,000.00 on the facts now?', 'Send $6,000.00 refund'],
    ['the same refund on the new facts, first of two', { ...base, action: 'repair' as const, repairIndex: 0, repair: sameOnNewFacts, firstOfTwo: true }, 'Approve $6,000.00 on the facts now (1 of 2)?', 'Approve (1 of 2)'],
  ])('%s', (_, pending, title, confirm) => {
    const copy = confirmCopy(pending);
    expect([copy.title, copy.confirm]).toEqual([title, confirm]);
    if (pending.firstOfTwo) expect(copy.body).toContain('nothing is sent');
  });
});

describe('the last of two approvals', () => {
  const second = { ...base, approvedBefore: ['Bea Novak'], customer: 'Jo Smith' };

  it('its confirmation says 2 of 2 and whose approval came first', () => {
    const copy = confirmCopy(second);
    expect(copy.title).toBe('Approve and send $6,000.00 (2 of 2)?');
    expect(copy.body).toContain('Bea Novak approved it first');
  });

  it('its toast says 2 of 2, who approved first, and names who paid', () => {
    const answer = { status: 'COMMITTED', item: { history: [] } } as unknown as DecisionAnswer;
    expect(finishedToast(answer, second).text).toBe('Sent $6,000.00 refund r-1 to Jo Smith, approved 2 of 2: Bea Novak first, then you');
  });
});

describe('toasts name the amount and who paid, never a repair’s own id', () => {
  const sent = { status: 'COMMITTED', item: { history: [{ kind: 'DECIDED', repair: { request_id: 'r-1:repair:74a2edc9' } }] } } as unknown as DecisionAnswer;

  it('an approval on the facts now is told as one, not as a repair', () => {
    const text = finishedToast(sent, { ...base, action: 'repair', repairIndex: 0, repair: sameOnNewFacts, customer: 'Jo Smith' }).text;
    expect(text).toBe('Sent $6,000.00 refund r-1 to Jo Smith, an approval on the facts now');
  });

  it('a rejection names the amount and who paid', () => {
    const rejected = { status: 'REJECTED', item: { history: [] } } as unknown as DecisionAnswer;
    expect(finishedToast(rejected, { ...base, action: 'reject', customer: 'Jo Smith' }).text).toBe('Rejected r-1: $6,000.00 for Jo Smith, never sent');
  });

  it('a repair names what was sent instead of what was asked, and not the new request’s id', () => {
    const less = { code: 'refund_remaining', why: 'Refund what is left', set: { amount: 500_000 } } as unknown as NonNullable<PendingDecision['repair']>;
    const text = finishedToast(sent, { ...base, action: 'repair', repairIndex: 0, repair: less, customer: 'Jo Smith' }).text;
    expect(text).toBe('Sent $5,000.00 refund to Jo Smith instead of the $6,000.00 asked in r-1, which is closed and never sent');
    expect(text).not.toContain(':repair:');
  });
});

describe('a new item’s toast', () => {
  const item = (request: Record<string, unknown>) => ({ request: { amount: 7_000, payment_intent: 'pi_1', ...request }, facts: { currency: 'usd' } }) as unknown as Parameters<typeof arrivalText>[0];

  it('names the request as the agent did', () => {
    expect(arrivalText(item({ id: 'case-4471' }))).toBe('New: $70.00 refund case-4471');
  });

  it('names a repair by the request it replaces, not by its own id', () => {
    expect(arrivalText(item({ id: 'case-4471:repair:74a2edc9', repair_of: 'case-4471' }))).toBe('New: $70.00 refund, a repair of case-4471');
  });
});
