import { describe, expect, it } from 'vitest';
import { confirmCopy, type PendingDecision } from '../../web/src/components/ConfirmDialog.tsx';

// The words of a confirmation say what the click does: an approval that is the first of two sends
// nothing, so it never reads "Approve and send".

const base: PendingDecision = { action: 'approve', amountCents: 600_000, currency: 'usd', paymentIntent: 'pi_1', requestId: 'r-1' };
const sameOnNewFacts = { why: '$6,000.00 still fits', set: {} } as unknown as NonNullable<PendingDecision['repair']>;

describe('confirmCopy', () => {
  it.each([
    ['an approval that sends', { ...base }, 'Approve and send $6,000.00?', 'Send $6,000.00 refund'],
    ['the first approval of two', { ...base, firstOfTwo: true }, 'Approve $6,000.00 (1 of 2)?', 'Approve (1 of 2)'],
    ['the same refund on the new facts, sent', { ...base, action: 'repair' as const, repairIndex: 0, repair: sameOnNewFacts }, 'Approve and send $6,000.00 on the new facts?', 'Send $6,000.00 refund'],
    ['the same refund on the new facts, first of two', { ...base, action: 'repair' as const, repairIndex: 0, repair: sameOnNewFacts, firstOfTwo: true }, 'Approve $6,000.00 on the new facts (1 of 2)?', 'Approve (1 of 2)'],
  ])('%s', (_, pending, title, confirm) => {
    const copy = confirmCopy(pending);
    expect([copy.title, copy.confirm]).toEqual([title, confirm]);
    if (pending.firstOfTwo) expect(copy.body).toContain('nothing is sent');
  });
});
