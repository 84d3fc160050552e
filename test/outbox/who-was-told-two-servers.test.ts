import { afterAll, describe, expect, it } from 'vitest';
import { MemoryDerivedTables } from '../../db/memory/derived.ts';
import type { Outbox } from '../../server/outbox/outbox.ts';
import type { Views } from '../../server/views/views.ts';
import { effectIdOf } from '../support/db-journals.ts';
import { escalated, outboxFileWorld, proposed as requestProposed, TAKING } from '../support/outbox-world.ts';

// Two servers on one SQLite file: one decides a request and journals its agent's callback, the
// other, which had let the closed item go, folds that message. "Who was told" about the item is
// the same from each, and the same as from views rebuilt from the journal.

const proposed = requestProposed('case-1', 1_001, { reason: 'cracked jar' });

const world = outboxFileWorld();
const { appMs } = world;

afterAll(() => world.close());

const server = (derived?: MemoryDerivedTables): Promise<Views> => world.server({ derived });

const outboxOf = (views: Views): Outbox => world.outbox(views, { owner: 'two-servers', channels: TAKING });

const toldAbout = async (views: Views, effectId: string) => (await (await views.current()).outbox.history.notificationsAbout(effectId)).map((told) => JSON.stringify(told));

describe('who was told, from two servers on one journal', () => {
  it('lists the agent’s callback once on the server that folds it after letting the item go', async () => {
    const a = await server();
    const b = await server();
    const effectId = effectIdOf(1);
    const journal = a.journal;
    await journal.append('PROPOSED', effectId, proposed);
    const escalation = await journal.append('ESCALATED', effectId, escalated(appMs));
    const worker = outboxOf(a);
    await worker.kick();
    await journal.append('DECIDED', effectId, { at_ms: appMs, by: 'ana', decision: 'reject', escalation: escalation.hash, group: 'ap-leads', members: ['ana', 'bea'], repair: null });
    // B folds the decision, and lets the closed item go at its next catch-up.
    await b.current();
    await b.current();
    expect((await b.current()).outbox.inMemory.items).toBe(0);
    // A journals the agent's callback (not attempted yet) and writes the tables past it.
    expect(await worker.plan()).toBe(1);
    await a.current();
    const fromA = await toldAbout(a, effectId);
    expect(fromA).toHaveLength(4);
    const rebuilt = await server(new MemoryDerivedTables());
    expect(await toldAbout(rebuilt, effectId)).toEqual(fromA);
    // B folds the callback, reads the item back from its row: the callback is listed once.
    expect(await toldAbout(b, effectId)).toEqual(fromA);
  });
});
