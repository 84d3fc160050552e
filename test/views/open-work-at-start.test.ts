import { afterAll, describe, expect, it } from 'vitest';
import { CONFIG_CHAIN_ID } from '../../shared/entries.ts';
import { configEntryFields } from '../../server/config/config-at-start.ts';
import type { Views } from '../../server/views/views.ts';
import { checkpointAt } from '../support/checkpoint-start.ts';
import { checkpointKey } from '../support/checkpoints.ts';
import { effectIdOf } from '../support/db-journals.ts';
import { escalated, outboxFileWorld, proposed, RecordingChannels } from '../support/outbox-world.ts';

// Every view kept in the derived tables reads its open work from them at start, through the one
// hook the writer calls (`DerivedSource.load`): a server started at the newest checkpoint, with
// no entry before it replayed, holds the same open work as the server that wrote the tables.

/** Requests escalated and left waiting, and escalated then rejected. */
const WAITING = 3;
const REJECTED = 4;

const world = outboxFileWorld();
afterAll(() => world.close());

const reload = configEntryFields({
  atMs: 1_000,
  sha256: '1'.padStart(64, '0'),
  cause: 'start',
  comparedWith: null,
  roster: { people: ['ana'], members: [] },
  changes: { peopleAdded: ['ana'], peopleRemoved: [], joined: [], left: [] },
});

/** The open work a server holds: the inbox's queue and chains in memory, the outbox's items and messages, the last reload. */
async function held(views: Views) {
  const { inbox, outbox, configReloads } = await views.current();
  const { items, messages } = outbox.inMemory;
  return {
    queue: inbox.queue(new Set(['ap-leads'])).map((item) => item.effect_id),
    inboxHeld: views.inboxHeld,
    outbox: { items, messages, due: outbox.due(world.wall.nowMs).map((message) => message.id).sort() },
    latestReload: configReloads.latest(),
  };
}

describe('a start at the newest checkpoint', () => {
  it('reads every view’s open work from the tables, with no entry before it replayed', async () => {
    const storage = await world.open();
    const first = world.viewsOn(storage);
    expect(await first.replayAtStart()).toBeNull();
    const { journal } = first;
    // Every message fails worth a retry: each is still owed.
    const channels = new RecordingChannels();
    channels.failing = true;
    const worker = world.outbox(first, { owner: 'first', channels });
    for (let n = 1; n <= WAITING + REJECTED; n++) {
      const effectId = effectIdOf(n);
      await journal.append('PROPOSED', effectId, proposed(`case-${n}`, 1_000 + n, { paymentIntent: `pi_${n}` }));
      const escalation = await journal.append('ESCALATED', effectId, escalated(world.appMs));
      if (n > WAITING) await journal.append('DECIDED', effectId, { at_ms: world.appMs, by: 'ana', decision: 'reject', escalation: escalation.hash, group: 'ap-leads', members: ['ana', 'bea'], repair: null });
      await worker.kick();
      world.advanceApp(600_000);
    }
    await journal.append('CONFIG', CONFIG_CHAIN_ID, reload);
    world.wall.advance(3_600_000);
    // What the last catch-up closed leaves at the next.
    await first.current();
    const before = await held(first);
    expect(before.queue).toHaveLength(WAITING);
    expect(before.inboxHeld).toBe(WAITING);
    // The waiting ones' three messages each (two people, the team) and the rejected ones' callbacks, all owed again.
    expect(before.outbox.messages).toBe(3 * WAITING + REJECTED);
    expect(before.outbox.due).toHaveLength(3 * WAITING + REJECTED);
    expect(before.latestReload?.sha256).toBe(reload.sha256);

    await checkpointAt(storage, first.head!.size);
    const again = await world.open();
    const second = world.viewsOn(again, { startFrom: 'checkpoint', checkpoints: { store: again.checkpoints, key: checkpointKey } });
    expect(await second.replayAtStart()).toBeNull();
    expect(second.followed.entriesRead).toBe(0);
    expect(await held(second)).toEqual(before);
  });
});
