import { describe, expect, it } from 'vitest';
import { Outbox } from '../../server/outbox/outbox.ts';
import type { NotificationsConfig } from '../../server/outbox/types.ts';
import { Views } from '../../server/views/views.ts';
import { effectIdOf } from '../support/db-journals.ts';
import { dryJournal, NOTIFICATIONS, outboxWorld, proposed, RecordingChannels } from '../support/outbox-world.ts';

// An agent's callback is owed for a request made final within the delivery window (24 h): "a
// request made final long before callbacks were configured is not announced now"
// (server/outbox/plan.ts `owedCallback`), and a start plans the day's final items again when an
// agent has a callback. A reload may add an agent's callback (docs/operators/configuration.md):
// the server that reloaded must then owe what a restart under the same config owes.

describe('a reload that gives an agent a callback', () => {
  it('owes the day\'s final requests of that agent what a restart under the same config owes', async () => {
    // No agent has a callback yet.
    const config: NotificationsConfig = { ...NOTIFICATIONS, agents: {} };
    const w = outboxWorld({ config });
    const item = effectIdOf(3);
    await w.journal.append('PROPOSED', item, { ...proposed('case-3', 2_000), agent: 'inbox' });
    await w.journal.append('COMMITTED', item, { result: { id: 're_1' } });
    const outbox = w.outbox();
    await outbox.kick();

    // An hour later the config is reloaded: bot now has a callback (the Outbox reads the config in force).
    w.wall.advance(3_600_000);
    config.agents = { ...NOTIFICATIONS.agents };

    // A restart under this config calls bot back: its request was made final an hour ago.
    const restarted = new Views({ journal: w.journal, inboxName: 'inbox', nowMs: () => w.appMs, log: { fatal: () => {}, error: () => {} } });
    expect(await restarted.replayAtStart()).toBeNull();
    const owedAfterRestart: string[] = [];
    await new Outbox({
      journal: dryJournal(restarted.journal, owedAfterRestart),
      current: async () => (await restarted.current()).outbox,
      notifications: config,
      channels: new RecordingChannels(),
      nowMs: () => w.appMs,
      wallMs: () => w.wall.nowMs,
      owner: 'restarted',
      log: { warn: () => {}, error: () => {} },
    }).plan();
    expect(owedAfterRestart).toHaveLength(1);

    // The server that reloaded owes the same.
    await outbox.kick();
    const told = (await (await w.views.current()).outbox.history.messagesAbout(item)).map((m) => `${m.recipient.kind}:${m.recipient.name}:${m.event}`);
    // The item was planned once with no callback; the pass after the reload plans it again.
    expect(told).toEqual(['agent:bot:final']);
    // Once per such reload: the day's final items are not handed to the planner again.
    expect(await (await w.views.current()).outbox.takeFinals(true)).toEqual([]);
  });
});
