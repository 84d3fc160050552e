import { describe, expect, it } from 'vitest';
import type { JournalStore } from '../../server/journal/store.ts';
import { effectIdOf } from '../support/db-journals.ts';
import { escalated, outboxFileWorld, outboxWorld, proposed, RecordingChannels } from '../support/outbox-world.ts';

// A planning pass that fails part way (the journal busy for one append) is logged as "the next one
// tries again" (server/outbox/outbox.ts `kick`). The items the pass took (`takeTouched`) and did
// not plan are planned by the next pass: nothing else plans an escalation's messages again before
// a restart (the ticker plans reminders and digests only).

/** A journal whose first MESSAGE append fails as a busy database does. */
function busyOnce(journal: JournalStore): JournalStore {
  let failed = false;
  return new Proxy(journal, {
    get(target, name, receiver) {
      const value = Reflect.get(target, name, receiver) as unknown;
      if (name !== 'appendIf' || typeof value !== 'function') return typeof value === 'function' ? value.bind(target) : value;
      return async (...args: unknown[]) => {
        if (!failed && args[0] === 'MESSAGE') {
          failed = true;
          throw Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' });
        }
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}

describe('a planning pass that fails part way', () => {
  it('leaves the escalation it took to the next pass: every member and the team are still told', async () => {
    const w = outboxWorld({ wrapJournal: busyOnce });
    const item = effectIdOf(1);
    await w.journal.append('PROPOSED', item, proposed('case-1', 8_000));
    await w.journal.append('ESCALATED', item, escalated(w.appMs));
    const outbox = w.outbox();
    await outbox.kick(); // the first MESSAGE append fails: the pass is logged and ends
    await outbox.kick(); // "the next one tries again"
    await outbox.kick();
    const told = (await (await w.views.current()).outbox.history.messagesAbout(item)).map((m) => `${m.recipient.kind}:${m.recipient.name}`).sort();
    // The failed pass handed the item back (`retouch`): a later pass planned its messages.
    expect(told).toEqual(['group:ap-leads', 'person:ana', 'person:bea']);
  });

  it("at a start, leaves the day's final items to the next pass: the agent is still called back", async () => {
    const world = outboxFileWorld();
    try {
      // A server made the request final and stopped before its outbox planned: the tables hold it.
      const first = await world.server();
      const item = effectIdOf(2);
      await first.journal.append('PROPOSED', item, { ...proposed('case-2', 2_000), agent: 'inbox' });
      await first.journal.append('COMMITTED', item, { result: { id: 're_1' } });
      await first.current();
      // The next start: its first pass (the day's final items, read once) fails on a busy append.
      const views = await world.server();
      const outbox = world.outbox(views, { owner: 'p2', channels: new RecordingChannels(), journal: busyOnce(views.journal) });
      await outbox.kick();
      await outbox.kick();
      const callbacks = (await (await views.current()).outbox.history.messagesAbout(item)).map((m) => `${m.recipient.kind}:${m.recipient.name}:${m.event}`);
      // The day's final items are read once (`takeFinals`); the failed pass handed them back.
      expect(callbacks).toEqual(['agent:bot:final']);
    } finally {
      await world.close();
    }
  });
});
