import { afterAll, describe, expect, it } from 'vitest';
import type { LiveMessage } from '../../shared/api.ts';
import type { LiveSocket } from '../../server/live/hub.ts';
import { effectIdOf } from '../support/db-journals.ts';
import { escalated, outboxFileWorld, proposed } from '../support/outbox-world.ts';

// Two servers on one journal share its derived tables: whichever catches up first writes the rows
// of the other's entries too. An approver whose inbox is open on the server that catches up second
// must still be told of each new item: the row the other server wrote already holds the entries
// this server has not yet told anyone about.

const world = outboxFileWorld();
afterAll(() => world.close());

function socket(): LiveSocket & { messages: LiveMessage[] } {
  const messages: LiveMessage[] = [];
  return { messages, readyState: 1, send: (data: string) => messages.push(JSON.parse(data) as LiveMessage), close: () => {} };
}

const itemsTold = (messages: readonly LiveMessage[]) =>
  messages.flatMap((message) => (message.type === 'item' && message.item !== null ? [message.item.request.id] : []));

describe('an item asked on one server, on an inbox open on another', () => {
  it('is told even when the other server wrote its row to the shared tables before this one read its entries', async () => {
    const a = await world.server();
    // This server's table writes run `beforeWrite` first: the other server moves on in between.
    let beforeWrite: (() => Promise<void>) | null = null;
    const storage = await world.open();
    const tables = storage.derived;
    const derived = new Proxy(tables, {
      get(target, key) {
        if (key === 'advance') {
          return async (...args: Parameters<typeof tables.advance>) => {
            const run = beforeWrite;
            beforeWrite = null;
            await run?.();
            return target.advance(...args);
          };
        }
        const value = Reflect.get(target, key, target) as unknown;
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const b = world.viewsOn(storage, { derived });
    expect(await b.replayAtStart()).toBeNull();
    const approver = socket();
    await b.join(approver, new Set(['ap-leads']));

    const ask = async (n: number) => {
      await a.journal.append('PROPOSED', effectIdOf(n), proposed(`case-${n}`, 1_000 * n, { paymentIntent: `pi_${n}` }));
      await a.journal.append('ESCALATED', effectIdOf(n), escalated(1_000 * n));
    };
    // case-1 is read by this server first. Before it writes case-1's rows, case-2 is asked and the
    // other server writes the rows of both: this server's write loses to it, and case-2's entries
    // come to this server with their row already in the tables.
    await ask(1);
    beforeWrite = async () => {
      await ask(2);
      await a.current();
    };
    await b.current();
    await b.current();

    expect(itemsTold(approver.messages)).toEqual(['case-1', 'case-2']);
    const { inbox } = await b.current();
    expect(inbox.queue(new Set(['ap-leads'])).map((item) => item.request.id).sort()).toEqual(['case-1', 'case-2']);
  });
});
