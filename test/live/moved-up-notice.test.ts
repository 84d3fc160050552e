import { describe, expect, it } from 'vitest';
import type { InboxItem, LiveMessage } from '../../shared/api.ts';
import { LiveHub, type LiveSocket } from '../../server/live/hub.ts';

// The group an item left is told why when it left because their deadline passed, and only they
// are: the group it reached gets the item, anyone else nothing (the audience rules stay the hub's).

function socket(): LiveSocket & { messages: LiveMessage[] } {
  const messages: LiveMessage[] = [];
  return { messages, readyState: 1, send: (data: string) => messages.push(JSON.parse(data) as LiveMessage), close: () => {} };
}

function item(fields: Partial<InboxItem>): InboxItem {
  return {
    effect_id: 'e1',
    request: { id: 'case-9', agent: 'support-bot', payment_intent: 'pi_9', amount: 7_201, flags: [] },
    state: 'ESCALATED',
    reason: 'needs_judgment',
    why: 'over $50.00',
    detail: [],
    facts: { currency: 'usd' },
    changes: [],
    repairs: [],
    route: 'default',
    group: 'ap-leads',
    routed_to: ['ana'],
    level: 0,
    escalated_at_ms: 1_000,
    due_ms: 5_000,
    breach: false,
    missed_due_ms: null,
    escalation: 'h1',
    asked_at_ms: 1_000,
    waiting_since_ms: 1_000,
    moved_from: null,
    ...fields,
  };
}

describe('live feed: an item that moved up tells the group it left', () => {
  it('ap-leads hears it moved up to finance-manager and whose deadline passed; finance-manager gets the item; risk hears nothing', () => {
    const hub = new LiveHub(() => 9_000);
    const apLeads = socket();
    const fm = socket();
    const risk = socket();
    hub.join(apLeads, new Set(['ap-leads']), []);
    hub.join(fm, new Set(['finance-manager']), []);
    hub.join(risk, new Set(['risk']), []);
    const before = item({});
    const after = item({ group: 'finance-manager', level: 1, breach: true, due_ms: 9_000, escalation: 'h2', moved_from: { group: 'ap-leads', due_ms: 5_000, at_ms: 6_000 } });
    hub.publishItem({ effectId: 'e1', before, after });
    expect(apLeads.messages.at(-1)).toEqual({
      type: 'item',
      effect_id: 'e1',
      item: null,
      now_ms: 9_000,
      moved_up: { request_id: 'case-9', amount: 7_201, currency: 'usd', from_group: 'ap-leads', missed_due_ms: 5_000, to_group: 'finance-manager' },
    });
    expect(fm.messages.at(-1)).toMatchObject({ type: 'item', item: { group: 'finance-manager' } });
    expect(fm.messages.at(-1)).not.toHaveProperty('moved_up');
    expect(risk.messages.map((m) => m.type)).toEqual(['snapshot']);
  });

  it('an item that left for any other reason (a decision) carries no moved_up', () => {
    const hub = new LiveHub(() => 9_000);
    const apLeads = socket();
    hub.join(apLeads, new Set(['ap-leads']), []);
    hub.publishItem({ effectId: 'e1', before: item({}), after: null });
    expect(apLeads.messages.at(-1)).toEqual({ type: 'item', effect_id: 'e1', item: null, now_ms: 9_000 });
  });
});
