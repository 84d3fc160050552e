import { describe, expect, it } from 'vitest';
import type { InboxItem, ItemDetail } from '../../shared/api.ts';
import type { Entry } from '../../shared/entries.ts';
import { type LiveNews, newsOf } from '../../web/src/live-news.ts';

// What an open item page tells its reader when the live feed says the item moved: the page reads
// it again and compares. A table: what the page showed, what it reads now, what it says.

const NAMES: Record<string, string> = { bea: 'Bea Novak' };
const displayName = (name: string) => NAMES[name] ?? name;

function item(group: string, escalation: string, repairs = 0): InboxItem {
  return { group, escalation, level: group === 'ap-leads' ? 0 : 1, repairs: Array.from({ length: repairs }, () => ({ code: 'refund_remaining', set: { amount: 1 }, why: 'x' })) } as unknown as InboxItem;
}

const decided = { kind: 'DECIDED', hash: 'h-decided', by: 'bea', decision: 'reject', at_ms: 1_000, reason: 'store credit' } as unknown as Entry;

function detail(state: ItemDetail['state'], shown: InboxItem | null, history: Entry[] = [], outcome: ItemDetail['outcome'] = 'open'): ItemDetail {
  return { state, item: shown, history, outcome } as unknown as ItemDetail;
}

const waiting = detail('ESCALATED', item('ap-leads', 'e1'));

const cases: [string, ItemDetail, ItemDetail, LiveNews | null][] = [
  [
    'someone else decided: who, what, when and why',
    waiting,
    detail('CLOSED', null, [decided], 'rejected'),
    { kind: 'decided', state: 'CLOSED', outcome: 'rejected', decided: { action: 'reject', by: 'bea', display_name: 'Bea Novak', at_ms: 1_000, reason: 'store credit' } },
  ],
  ['it left with no person deciding (a decision the page already showed is not news)', detail('ESCALATED', item('ap-leads', 'e1'), [decided]), detail('DONE', null, [decided], 'refunded'), { kind: 'finished', state: 'DONE', outcome: 'refunded' }],
  ['it moved up to a group not mine', waiting, detail('ESCALATED', item('finance-manager', 'e2')), { kind: 'moved', group: 'finance-manager', level: 1 }],
  ['shown again on new facts in my group, with a repair', waiting, detail('ESCALATED', item('ap-leads', 'e2', 1)), { kind: 'reshown', repairs: 1, stillFits: false }],
  ['shown again in a group not mine that it was already in (finance reading)', detail('ESCALATED', item('finance-manager', 'e1')), detail('ESCALATED', item('finance-manager', 'e2')), { kind: 'reshown', repairs: 0, stillFits: false }],
  [
    'shown again where the same refund still fits: no repair is offered, approving it is an approval on the facts now',
    waiting,
    detail('ESCALATED', { ...item('ap-leads', 'e2'), repairs: [{ code: 'still_fits', set: {}, why: '$60.00 still fits' }] } as unknown as InboxItem),
    { kind: 'reshown', repairs: 0, stillFits: true },
  ],
  [
    'shown again with a repair the reader may not accept (it is made for them): none is offered',
    waiting,
    { ...detail('ESCALATED', item('ap-leads', 'e2', 1)), approval_block: { code: 'beneficiary', why: 'x' } } as ItemDetail,
    { kind: 'reshown', repairs: 0, stillFits: false },
  ],
  ['the same escalation: nothing to say', waiting, detail('ESCALATED', item('ap-leads', 'e1')), null],
];

describe('newsOf: what an open item page says when the item moved under it', () => {
  it.each(cases)('%s', (_, before, after, expected) => {
    expect(newsOf(before, after, ['ap-leads'], displayName)).toEqual(expected);
  });
});
