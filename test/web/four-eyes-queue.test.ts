import { describe, expect, it } from 'vitest';
import type { DecisionAnswer, InboxItem } from '../../shared/api.ts';
import type { PendingDecision } from '../../web/src/components/ConfirmDialog.tsx';
import { applyFilters, filtersQuery, parseFilters } from '../../web/src/inbox-filters.ts';
import { finishedToast, needsMyApproval, nextAfter, nextOpenFor } from '../../web/src/next-item.ts';
import { finishedItem } from '../../web/src/use-decision.ts';

// A two-approver item after this person's first approval: it is off their plate, so the page
// moves on, and the next item is never one they approved already (where `a` can do nothing).

function item(id: string, given: string[] = [], extra: Partial<InboxItem> = {}): InboxItem {
  return {
    effect_id: id,
    request: { id, amount: 600_000, payment_intent: `pi_${id}`, agent: 'support-bot' },
    facts: { currency: 'usd' },
    reason: 'needs_judgment',
    detail: [],
    group: 'ap-leads',
    waiting_since_ms: 0,
    repairs: [],
    changes: [],
    ...(given.length > 0 || id.startsWith('two') ? { approvals: { required: 2, given: given.map((by) => ({ by, at_ms: 1 })) } } : {}),
    ...extra,
  } as unknown as InboxItem;
}

const twoMine = item('two-mine', ['ana']);
const twoBeas = item('two-beas', ['bea']);
const twoNone = item('two-none');
const single = item('single');
const forAna = item('for-ana', [], { request: { id: 'for-ana', amount: 8_000, payment_intent: 'pi_x', agent: 'support-bot', on_behalf_of: 'ana' } } as Partial<InboxItem>);
const ambiguous = item('ambiguous', [], { reason: 'ambiguous' });
const clock = { appNowMs: 0, offsetMs: 0, reader: 'ana' };

describe('after a first approval of two', () => {
  it('the decision finished the item for this person: the page moves on', () => {
    expect(finishedItem('PARTLY_APPROVED')).toBe(true);
  });
  it('the toast says it waits for a second approver', () => {
    const decided = { action: 'approve', amountCents: 600_000, currency: 'usd', paymentIntent: 'pi', requestId: 'case-1', firstOfTwo: true } as PendingDecision;
    const answer = { status: 'PARTLY_APPROVED', message: '', item: {} } as unknown as DecisionAnswer;
    expect(finishedToast(answer, decided).text).toBe('Approved $6,000.00 refund case-1 (1 of 2): it waits for a second approver');
  });
});

describe('the next item skips those the reader approved already', () => {
  it('an item ana approved is not next for ana, and is for bea', () => {
    const queue = [twoNone, twoMine, single].map((i) => i.effect_id);
    expect(nextAfter(queue, 'two-none', nextOpenFor([twoNone, twoMine, single], 'ana'))).toBe('single');
    expect(nextAfter(queue, 'two-none', nextOpenFor([twoNone, twoMine, single], 'bea'))).toBe('two-mine');
  });
});

describe('"needs my approval"', () => {
  it('keeps what the reader may approve and has not', () => {
    expect([twoMine, twoBeas, twoNone, single, forAna, ambiguous].filter((i) => needsMyApproval(i, 'ana')).map((i) => i.effect_id)).toEqual(['two-beas', 'two-none', 'single']);
  });
  it('is a filter kept in the address bar as ?needs=me', () => {
    const filters = parseFilters('?needs=me');
    expect(filters.needsMe).toBe(true);
    expect(filtersQuery(filters)).toBe('?needs=me');
    expect(applyFilters([twoMine, twoBeas, forAna, single], filters, clock).map((i) => i.effect_id)).toEqual(['two-beas', 'single']);
    expect(applyFilters([twoMine, twoBeas, forAna, single], parseFilters(''), clock)).toHaveLength(4);
  });
});
