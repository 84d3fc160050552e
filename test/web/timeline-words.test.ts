import { describe, expect, it } from 'vitest';
import type { HistoryApproval } from '../../shared/api.ts';
import type { Entry } from '../../shared/entries.ts';
import { describeEntry, type StepContext } from '../../web/src/components/Timeline.tsx';

// An item's history tells a first approval of two as the first of two, the second as the one that
// approved it for sending, and a voided first approval as voided, with why.

const decided = { kind: 'DECIDED', effect_id: 'e', hash: 'h2', prev: 'h1', ts_ms: 0, at_ms: 0, by: 'ana', decision: 'approve', escalation: 'x', group: 'ap-leads', members: ['ana', 'bea'], repair: null } as unknown as Entry;
const context = (approval?: HistoryApproval): StepContext => ({
  isFirstProposal: false,
  currency: 'usd',
  previousGroup: null,
  displayName: (name) => (name === 'ana' ? 'Ana Lopez' : name),
  ...(approval === undefined ? {} : { approval }),
});
const approval = (over: Partial<HistoryApproval>): HistoryApproval => ({ hash: 'h2', by: 'ana', display_name: 'Ana Lopez', at_ms: 0, nth: 1, required: 2, completes: false, voided: null, ...over });

describe('the timeline of a two-approver item', () => {
  it.each([
    ['one approver is enough', undefined, 'Approved', []],
    ['a first approval of two', approval({}), 'Approved, 1 of 2: the first approval', ['Nothing is sent until a second person approves']],
    ['the second, which completes it', approval({ nth: 2, completes: true }), 'Approved, 2 of 2: approved for sending', []],
    ['a first approval that expired', approval({ voided: 'approval_expired' }), 'Approved, 1 of 2: voided', ['No longer counts, because it expired before a second person approved']],
    ['a first approval when it moved up', approval({ voided: 'moved_up' }), 'Approved, 1 of 2: voided', ['No longer counts, because the item moved up its chain to another group']],
    ['a first approval another person rejected', approval({ voided: 'rejected' }), 'Approved, 1 of 2: voided', ['No longer counts, because another person rejected it before a second approval']],
  ])('%s', (_, shown, title, notes) => {
    const step = describeEntry(decided, context(shown));
    expect([step.title, step.who, step.notes]).toEqual([title, 'Ana Lopez', notes]);
  });
});

describe('the timeline of a refund sent under two approvals', () => {
  const names: Record<string, string> = { ana: 'Ana Lopez', bea: 'Bea Novak' };
  const words: StepContext = { isFirstProposal: false, currency: 'usd', previousGroup: null, displayName: (name) => names[name] ?? name };
  const lease = { by: 'ana', group: 'ap-leads', co_approvals: [{ by: 'bea', at_ms: 0 }] };

  it('the send is prepared under both approvals, the earlier first', () => {
    const proposed = { kind: 'PROPOSED', lease, effect: { amount: 600_000 }, request: {} } as unknown as Entry;
    expect(describeEntry(proposed, words).title).toBe('Prepared to send $6,000.00 under the approvals of Bea Novak and Ana Lopez');
  });

  it('the authority checked is both approvals', () => {
    const authorized = { kind: 'AUTHORIZED', lease } as unknown as Entry;
    expect(describeEntry(authorized, words).title).toBe('Authority checked: the approvals of Bea Novak and Ana Lopez are live');
  });

  it('one approver reads as before', () => {
    const authorized = { kind: 'AUTHORIZED', lease: { by: 'ana', group: 'ap-leads' } } as unknown as Entry;
    expect(describeEntry(authorized, words).title).toBe('Authority checked: Ana Lopez’s approval is live');
  });
});

describe('an approval on the facts now', () => {
  it('is told as an approval on the facts now, not a repair, and names no request it made', () => {
    const onFactsNow = { ...decided, repair: { code: 'still_fits', set: {}, request_id: 'case-1:repair:74a2edc9' } } as unknown as Entry;
    const step = describeEntry(onFactsNow, context());
    expect([step.title, step.notes]).toEqual(['Approved on the facts now', []]);
  });
});
