import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryDerivedTables } from '../../db/memory/derived.ts';
import type { Storage } from '../../db/port/storage.ts';
import type { FieldsOf } from '../../shared/entries.ts';
import { canonical } from '../../shared/receipts/canonical.ts';
import type { Outbox } from '../../server/outbox/outbox.ts';
import type { OutboxView } from '../../server/outbox/view.ts';
import type { Views } from '../../server/views/views.ts';
import { effectIdOf } from '../support/db-journals.ts';
import { dryJournal, escalated, HOUR, outboxFileWorld, proposed as requestProposed, RecordingChannels } from '../support/outbox-world.ts';

// The outbox kept in derived tables on a real SQLite file: after many requests told, decided and
// called back, memory holds only open work; a restart over the same file (new views, the tables
// kept) shows and plans the same as before it, and as views whose tables are rebuilt from the journal.

/** Requests told, decided and called back. */
const CLOSED = 40;

const proposed = (n: number): FieldsOf<'PROPOSED'> => requestProposed(`case-${n}`, 1_000 + n, { paymentIntent: `pi_${n}`, reason: 'cracked jar' });

const world = outboxFileWorld();
const { wall } = world;

const viewsOn = (storage: Storage, derived = storage.derived): Views => world.viewsOn(storage, { derived });

/** An outbox over `views` whose journal takes no message: the ids it would journal are collected. */
function dryOutbox(views: Views, owed: string[]): Outbox {
  return world.outbox(views, { owner: 'tables-test', channels: new RecordingChannels(), journal: dryJournal(views.journal, owed) });
}

/** Everything the outbox shows and plans, as text: its messages and items, each item's notifications, the counts, and what a plan and a tick would journal now. */
async function shown(views: Views): Promise<Record<string, string>> {
  const { outbox } = await views.current();
  const items = await outbox.history.allItems();
  const notifications = await Promise.all(items.map(async (item) => [item.effectId, await outbox.history.notificationsAbout(item.effectId)]));
  const owed: string[] = [];
  const dry = dryOutbox(views, owed);
  await dry.plan();
  await dry.tick();
  return {
    messages: canonical(await outbox.history.allMessages()),
    items: canonical(items),
    notifications: canonical(notifications),
    figures: canonical([...(await outbox.figures())].sort()),
    held: canonical(outbox.held().map((m) => m.id)),
    due: canonical(outbox.due(wall.nowMs + HOUR).map((m) => m.id)),
    owed: canonical(owed.sort()),
  };
}

let views: Views;
let outbox: OutboxView;
let channels: RecordingChannels;

beforeAll(async () => {
  const storage = await world.open();
  views = viewsOn(storage);
  expect(await views.replayAtStart()).toBeNull();
  const journal = views.journal;
  channels = new RecordingChannels();
  const worker = world.outbox(views, { owner: 'tables-test', channels });
  for (let n = 1; n <= CLOSED + 1; n++) {
    const effectId = effectIdOf(n);
    await journal.append('PROPOSED', effectId, proposed(n));
    const escalation = await journal.append('ESCALATED', effectId, escalated(world.appMs));
    // The last request stays open: escalated, undecided, its messages failed once and owed again.
    channels.failing = n > CLOSED;
    await worker.kick();
    if (n <= CLOSED) {
      await journal.append('DECIDED', effectId, { at_ms: world.appMs, by: 'ana', decision: 'reject', escalation: escalation.hash, group: 'ap-leads', members: ['ana', 'bea'], repair: null });
      await worker.kick();
    }
    // A window of its own for each, so that none is held for a digest.
    world.advanceApp(600_000);
    wall.advance(1_000);
  }
  // Six more waiting in one window: each person is told of five, the sixth is held for the window's digest.
  channels.failing = false;
  for (let n = CLOSED + 3; n <= CLOSED + 8; n++) {
    await journal.append('PROPOSED', effectIdOf(n), proposed(n));
    await journal.append('ESCALATED', effectIdOf(n), escalated(world.appMs));
  }
  await worker.kick();
  // One more escalated as a server stopped before it planned: a start owes its messages.
  await journal.append('PROPOSED', effectIdOf(CLOSED + 2), proposed(CLOSED + 2));
  await journal.append('ESCALATED', effectIdOf(CLOSED + 2), escalated(world.appMs));
  // And one rejected as it stopped: a start owes the agent's callback, though the item is closed.
  await journal.append('PROPOSED', effectIdOf(CLOSED + 9), proposed(CLOSED + 9));
  const last = await journal.append('ESCALATED', effectIdOf(CLOSED + 9), escalated(world.appMs));
  await journal.append('DECIDED', effectIdOf(CLOSED + 9), { at_ms: world.appMs, by: 'ana', decision: 'reject', escalation: last.hash, group: 'ap-leads', members: ['ana', 'bea'], repair: null });
  outbox = (await views.current()).outbox;
  // Past the open request's reminder: a tick owes one.
  world.advanceApp(2 * HOUR);
});

afterAll(() => world.close());

describe('the outbox on its derived tables', () => {
  it('holds only open work after many requests told, decided and called back', async () => {
    // Three messages each (two people, the team) and an agent's callback for each decided one.
    expect(channels.delivered).toHaveLength((CLOSED + 1) * 3 + CLOSED + 6 * 3 - 2);
    // What the last catch-up closed leaves at the next.
    await views.current();
    await views.current();
    // Open: the 8 waiting items, the 3 messages retrying, the 2 held for a digest.
    expect(outbox.inMemory).toEqual({ items: 8, messages: 5, windows: 1 });
    expect(await outbox.figures()).toEqual(
      new Map([
        ['callback:0 delivered', CLOSED],
        ['email:0 delivered', 2 * CLOSED + 10],
        ['email:0 held', 2],
        ['email:0 retrying', 2],
        ['slack:0 delivered', CLOSED + 6],
        ['slack:0 retrying', 1],
      ]),
    );
    expect(await outbox.history.notificationsAbout(effectIdOf(1))).toHaveLength(4);
  });

  it('a restart over the same file shows and plans the same, holding only open work, as views rebuilt from the journal', async () => {
    const before = await shown(views);
    // The unplanned request's three messages, three reminders for each of the eight waiting, two
    // digests, and the rejected one's callback.
    expect(JSON.parse(before.owed!)).toHaveLength(3 + 8 * 3 + 2 + 1);
    expect(JSON.parse(before.due!)).toHaveLength(3);
    expect(JSON.parse(before.held!)).toHaveLength(2);
    const storage = await world.open();
    const restarted = viewsOn(storage);
    expect((await restarted.tablesFound()).reason).toBeNull();
    expect(await restarted.replayAtStart()).toBeNull();
    expect((await restarted.current()).outbox.inMemory).toEqual({ items: 8, messages: 5, windows: 0 });
    expect(await shown(restarted)).toEqual(before);
    const rebuilt = viewsOn(storage, new MemoryDerivedTables());
    expect(await rebuilt.replayAtStart()).toBeNull();
    expect(await shown(rebuilt)).toEqual(before);
    expect((await storage.derived.digests()).filter((digest) => digest.view.startsWith('outbox.'))).toEqual((await rebuiltDigests(storage)).filter((digest) => digest.view.startsWith('outbox.')));
  });
});

/** The digests of tables rebuilt from the journal apart. */
async function rebuiltDigests(storage: Storage) {
  const tables = new MemoryDerivedTables();
  expect(await viewsOn(storage, tables).replayAtStart()).toBeNull();
  return tables.digests();
}
