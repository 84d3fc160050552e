import { describe, expect, it } from 'vitest';
import type { InboxItem, LiveMessage } from '../../shared/api.ts';
import { LiveHub, type LiveSocket } from '../../server/live/hub.ts';

// A first approval of a two-approver item keeps its escalation: the live feed still says the item
// changed, so every open inbox shows "1 of 2" and the approver's next item is never this one.

function socket(): LiveSocket & { messages: LiveMessage[] } {
  const messages: LiveMessage[] = [];
  return { messages, readyState: 1, send: (data: string) => messages.push(JSON.parse(data) as LiveMessage), close: () => {} };
}

function item(given: string[]): InboxItem {
  return {
    effect_id: 'e1',
    request: { id: 'case-5', agent: 'support-bot', payment_intent: 'pi_5', amount: 600_000, flags: [] },
    state: 'ESCALATED',
    reason: 'needs_judgment',
    why: 'over $50.00',
    detail: [],
    facts: { currency: 'usd' },
    changes: [],
    repairs: [],
    route: 'four-eyes',
    group: 'ap-leads',
    routed_to: ['ana', 'bea'],
    level: 0,
    escalated_at_ms: 1_000,
    due_ms: null,
    breach: false,
    missed_due_ms: null,
    escalation: 'h1',
    asked_at_ms: 1_000,
    waiting_since_ms: 1_000,
    moved_from: null,
    approvals: { required: 2, given: given.map((by) => ({ by, at_ms: 2_000 })) },
  };
}

describe('live feed: approvals of the same escalation', () => {
  it('a first approval is published with who approved', () => {
    const hub = new LiveHub(() => 9_000);
    const apLeads = socket();
    hub.join(apLeads, new Set(['ap-leads']), []);
    hub.publishItem({ effectId: 'e1', before: item([]), after: item(['ana']) });
    expect(apLeads.messages.at(-1)).toMatchObject({ type: 'item', effect_id: 'e1', item: { approvals: { required: 2, given: [{ by: 'ana' }] } } });
  });
  it('an entry that changes neither the escalation nor its approvals is still not published', () => {
    const hub = new LiveHub(() => 9_000);
    const apLeads = socket();
    hub.join(apLeads, new Set(['ap-leads']), []);
    hub.publishItem({ effectId: 'e1', before: item(['ana']), after: item(['ana']) });
    expect(apLeads.messages.map((m) => m.type)).toEqual(['snapshot']);
  });
});
