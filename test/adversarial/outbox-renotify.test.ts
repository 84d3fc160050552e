import { describe, expect, it } from 'vitest';
import { overdueEscalations } from '../../server/inbox/escalation.ts';
import type { NotificationsConfig } from '../../server/outbox/types.ts';
import { effectIdOf } from '../support/db-journals.ts';
import { escalated, HOUR, outboxWorld, proposed } from './outbox-harness.ts';

// docs/operators/notifications.md: "a person hears of an item at most once per level and
// channel, even when it comes back to the same level". The message id is keyed on the *event*
// as well as the level, and the event of an ESCALATED is worked out from `breach` and the level
// before it (plan.ts escalationEvent). An item moved up to level 1 (breach: true, event
// `moved_up`) and then shown again at level 1 by the inbox (reshowWithoutRepairs writes the same
// level with breach: false, event `escalated`) gets a second id at the same level, so everyone at
// that level is told again. The same re-show at level 0 is (rightly) silent, so the rule holds
// or not depending on the path the item took.

const CONFIG: NotificationsConfig = {
  publicUrl: 'https://interlock.example',
  reminderAtShare: null,
  smtp: { host: 'smtp.example', port: 587, secure: false, user: null, password: null, from: 'Interlock <i@example.com>' },
  people: {
    ana: [{ kind: 'email', to: 'ana@example.com' }],
    bea: [{ kind: 'email', to: 'bea@example.com' }],
    fm: [{ kind: 'email', to: 'fm@example.com' }],
  },
  groups: { 'finance-manager': [{ kind: 'slack', url: 'https://hooks.slack.example/T/B/fm' }] },
  agents: {},
  callbackAllowPrivate: [],
};

const ROUTE = { chain: ['ap-leads', 'finance-manager'], slaMs: 4 * HOUR };
const members = (group: string) => (group === 'ap-leads' ? ['ana', 'bea'] : ['fm']);

describe('re-escalation at the same level', () => {
  it('at level 0, a re-show tells nobody again (holds)', async () => {
    const w = outboxWorld({ config: CONFIG });
    const item = effectIdOf(0x5a1);
    await w.journal.append('PROPOSED', item, proposed('renotify-0', 8_000));
    const first = escalated(w.appMs);
    await w.journal.append('ESCALATED', item, first);
    const outbox = w.outbox();
    await outbox.kick();
    const told = w.channels.delivered.length;
    // reshowWithoutRepairs: same group, level and deadline, breach false, repairs dropped.
    await w.journal.append('ESCALATED', item, { ...first, at_ms: w.appMs + 1, facts: { currency: 'usd', amount_paid: 10_000, refunded: 1_000 }, repairs: [] });
    await outbox.kick();
    expect(w.channels.delivered.length).toBe(told);
  });

  it('at level 1 after a move up, a re-show must not tell the level-1 people and team channel a second time', async () => {
    const w = outboxWorld({ config: CONFIG });
    const item = effectIdOf(0x5a2);
    await w.journal.append('PROPOSED', item, proposed('renotify-1', 8_000));
    const first = escalated(w.appMs);
    await w.journal.append('ESCALATED', item, first);
    const outbox = w.outbox();
    await outbox.kick();

    // The SLA passes: the inbox's own overdueEscalations moves it up to finance-manager.
    w.advanceApp(4 * HOUR + 1);
    const [movedUp] = overdueEscalations(first, ROUTE, first.facts, w.appMs, members);
    expect(movedUp).toMatchObject({ level: 1, group: 'finance-manager', breach: true });
    await w.journal.append('ESCALATED', item, movedUp!);
    await outbox.kick();
    const atLevel1 = () => w.channels.delivered.filter((d) => d.recipient.name === 'fm' || d.recipient.name === 'finance-manager');
    expect(atLevel1().map((d) => `${d.recipient.name}:${d.content.event}`)).toEqual(['fm:moved_up', 'finance-manager:moved_up']);

    // fm picks a repair after the facts moved: the inbox re-shows the item at the same level
    // (inbox.ts reshowWithoutRepairs: same group, level and due, breach false, no repairs).
    await w.journal.append('ESCALATED', item, {
      ...movedUp!,
      at_ms: w.appMs + 1,
      facts: { currency: 'usd', amount_paid: 10_000, refunded: 1_000 },
      repairs: [],
      breach: false,
    });
    await outbox.kick();
    // Fails today: fm and the team channel get a second "Decision needed" at level 1.
    expect(atLevel1().map((d) => `${d.recipient.name}:${d.content.event}`)).toEqual(['fm:moved_up', 'finance-manager:moved_up']);
  });
});
