import { describe, expect, it } from 'vitest';
import type { Entry, EntryFields, FieldsOf } from '../../shared/entries.ts';
import { InboxProjection } from '../../server/inbox/projection.ts';
import { buildChain, EFFECT_ID, type Step } from '../support/entries.ts';

// What an open item says of its trip to a person, folded from the journal alone: when the agent
// asked, since when it has waited, and which group missed the deadline it moved up from.

const HOUR_MS = 3_600_000;
const ASKED_MS = 1_796_000_000_000;
const REQUEST = { id: 'case-1', agent: 'support-bot', payment_intent: 'pi_1', amount: 8_000, flags: ['vip'] };
const FACTS = { payment_intent: 'pi_1', currency: 'usd', amount_received: 10_000, refunded_by_others: 0, refunded_outside: 0, disputed: false };

function proposed(): Step {
  return ['PROPOSED', { agent: 'inbox', lease: null, premises: FACTS, effect: { payment_intent: 'pi_1', amount: 8_000 }, request: REQUEST, at_ms: ASKED_MS }];
}

function escalated(fields: Partial<FieldsOf<'ESCALATED'>>): Step {
  return [
    'ESCALATED',
    {
      at_ms: ASKED_MS,
      reason: 'needs_judgment',
      why: 'over $50.00',
      detail: ["amount within its currency's limit"],
      failed_rules: [{ rule: "amount within its currency's limit", words: 'over $50.00' }],
      facts: FACTS,
      changes: [],
      repairs: [],
      route: 'default',
      group: 'ap-leads',
      routed_to: ['ana', 'bea'],
      level: 0,
      due_ms: ASKED_MS + 4 * HOUR_MS,
      breach: false,
      ...fields,
    } as EntryFields,
  ];
}

function itemOf(steps: readonly Step[]) {
  const projection = new InboxProjection('inbox');
  for (const entry of buildChain(EFFECT_ID, steps) as Entry[]) projection.apply(entry);
  return projection.queue(new Set(['ap-leads', 'finance-manager']))[0] ?? null;
}

describe('inbox items: the trip to a person, as an incident view tells it', () => {
  it('a new item was asked when the agent asked, waits since it reached a person, and moved from nowhere', () => {
    const item = itemOf([proposed(), escalated({ at_ms: ASKED_MS + 2_000 })]);
    expect(item).toMatchObject({ asked_at_ms: ASKED_MS, waiting_since_ms: ASKED_MS + 2_000, moved_from: null });
  });

  it('an SLA move names the group that missed its deadline, that deadline and when it moved; the wait goes on from the first escalation', () => {
    const due = ASKED_MS + 4 * HOUR_MS;
    const item = itemOf([
      proposed(),
      escalated({}),
      escalated({ at_ms: due + 60_000, group: 'finance-manager', routed_to: ['fm'], level: 1, due_ms: due + 4 * HOUR_MS, breach: true }),
    ]);
    expect(item).toMatchObject({ group: 'finance-manager', waiting_since_ms: ASKED_MS, moved_from: { group: 'ap-leads', due_ms: due, at_ms: due + 60_000 } });
  });

  it('a breach at the top of the chain keeps the group it moved up from, and a re-show on new facts keeps it too', () => {
    const due = ASKED_MS + 4 * HOUR_MS;
    const moved = escalated({ at_ms: due + 60_000, group: 'finance-manager', routed_to: ['fm'], level: 1, due_ms: due + 4 * HOUR_MS, breach: true });
    const top = escalated({ at_ms: due + 4 * HOUR_MS + 60_000, group: 'finance-manager', routed_to: ['fm'], level: 1, due_ms: null, breach: true });
    const reshown = escalated({ at_ms: due + 5 * HOUR_MS, group: 'finance-manager', routed_to: ['fm'], level: 1, due_ms: null, breach: false, facts: { ...FACTS, disputed: true } });
    expect(itemOf([proposed(), escalated({}), moved, top])?.moved_from).toMatchObject({ group: 'ap-leads', due_ms: due });
    expect(itemOf([proposed(), escalated({}), moved, top, reshown])?.moved_from).toMatchObject({ group: 'ap-leads', due_ms: due });
  });

  it('after a decision, a new trip starts afresh: it waits from its own escalation and moved from nowhere', () => {
    const due = ASKED_MS + 4 * HOUR_MS;
    const steps: Step[] = [
      proposed(),
      escalated({}),
      escalated({ at_ms: due + 60_000, group: 'finance-manager', routed_to: ['fm'], level: 1, due_ms: due + 4 * HOUR_MS, breach: true }),
      [
        'DECIDED',
        (sealed: readonly Entry[]) =>
          ({ at_ms: due + HOUR_MS * 2, by: 'fm', decision: 'approve', escalation: sealed.at(-1)!.hash, group: 'finance-manager', members: ['fm'], repair: null, reason: null }) as EntryFields,
      ],
      ['REFUSED', { code: 'stale_premise', reason: 'refunded by hand' }],
      escalated({ at_ms: due + HOUR_MS * 3, reason: 'stale_premise', detail: [], failed_rules: [], due_ms: due + HOUR_MS * 7 }),
    ];
    expect(itemOf(steps)).toMatchObject({ asked_at_ms: ASKED_MS, waiting_since_ms: due + HOUR_MS * 3, moved_from: null });
  });
});

describe('inbox items: failed rules of an escalation journaled before their words were kept', () => {
  const old = (detail: string[], facts = FACTS, flags: string[] = ['vip']) => {
    const steps: Step[] = [
      ['PROPOSED', { agent: 'inbox', lease: null, premises: facts, effect: { payment_intent: 'pi_1', amount: 8_000 }, request: { ...REQUEST, flags } }],
      // An older escalation has no failed_rules field at all.
      ['ESCALATED', JSON.parse(JSON.stringify({ ...(escalated({ detail, facts })[1] as object), failed_rules: undefined })) as EntryFields],
    ];
    return itemOf(steps);
  };

  it('are worded as they failed, from the facts the escalation kept ("over $50.00 · disputed · flag: vip"), never by names that read as if they passed', () => {
    const item = old(['amount at most $50.00', 'payment not disputed', 'no flag that needs a person'], { ...FACTS, disputed: true });
    expect(item?.failed_rules).toEqual([
      { rule: 'amount at most $50.00', words: 'over $50.00' },
      { rule: 'payment not disputed', words: 'disputed' },
      { rule: 'no flag that needs a person', words: 'flag: vip' },
    ]);
  });

  it('a rule name Interlock never shipped, or one that passes on the kept facts, reads "not met: <name>"', () => {
    const item = old(['amount fits what is left', 'a rule of our own'], FACTS, []);
    expect(item?.failed_rules).toEqual([
      { rule: 'amount fits what is left', words: 'not met: amount fits what is left' },
      { rule: 'a rule of our own', words: 'not met: a rule of our own' },
    ]);
  });
});
