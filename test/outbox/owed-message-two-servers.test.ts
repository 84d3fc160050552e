import { afterAll, describe, expect, it } from 'vitest';
import type { JournalStore } from '../../server/journal/store.ts';
import type { Views } from '../../server/views/views.ts';
import { effectIdOf } from '../support/db-journals.ts';
import { escalated, HOUR, outboxFileWorld, proposed as requestProposed, TAKING } from '../support/outbox-world.ts';

// Two servers on one SQLite file. One journals the messages an escalation owes while the other is
// between reading a page of the journal and writing the tables: the other finds the tables moved
// past its page, and then reads those messages. Each server holds every message still owed, as
// one started afresh on the same file does, so that either can deliver it if the other dies.

const proposed = requestProposed('case-1', 1_001, { reason: 'cracked jar' });

const world = outboxFileWorld();
const { wall, appMs } = world;

afterAll(() => world.close());

/** A server's views on the file; `afterScan` runs once each page is read, before the views apply it. */
function server(afterScan?: () => Promise<void>): Promise<Views> {
  return world.server({
    wrapJournal: (stored) =>
      new Proxy(stored, {
        get(target, property) {
          if (property === 'scan' && afterScan !== undefined) {
            return async (...args: Parameters<JournalStore['scan']>) => {
              const page = await target.scan(...args);
              if (page.length > 0) await afterScan();
              return page;
            };
          }
          const value: unknown = Reflect.get(target, property);
          return typeof value === 'function' ? value.bind(target) : value;
        },
      }),
  });
}

const dueIds = async (views: Views) => (await views.current()).outbox.due(wall.nowMs + HOUR).map((message) => message.id).sort();

describe('messages owed, from two servers on one journal', () => {
  it('are held by a server that finds the tables written past its page by the other', async () => {
    const a = await server();
    let between: (() => Promise<void>) | null = null;
    const b = await server(async () => {
      const run = between;
      between = null;
      await run?.();
    });
    const worker = world.outbox(a, { owner: 'server-a', channels: TAKING });
    const effectId = effectIdOf(1);
    await a.journal.append('PROPOSED', effectId, proposed);
    await a.journal.append('ESCALATED', effectId, escalated(appMs));
    // While B holds its page of the escalation, A journals the three messages it owes (not
    // attempted yet) and writes the tables past them.
    between = async () => {
      expect(await worker.plan()).toBe(3);
      await a.current();
    };
    await b.current();
    expect(between).toBeNull();
    const fromA = await dueIds(a);
    expect(fromA).toHaveLength(3);
    const fresh = await server();
    expect(await dueIds(fresh)).toEqual(fromA);
    expect(await dueIds(b)).toEqual(fromA);
  });
});
