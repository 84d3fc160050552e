import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InboxItem } from '../../shared/api.ts';
import { type AppWorld, buildAppWorld } from '../support/app-world.ts';

const HOUR_MS = 3_600_000;
let world: AppWorld;
beforeAll(async () => {
  world = await buildAppWorld();
});
afterAll(async () => world.close());

/** An $80 refund: the default route, ap-leads then finance-manager, 4 h at each. */
async function queued(requestId: string): Promise<string> {
  const pi = await world.payment(10_000);
  const posted = await world.agent('POST', '/v1/refunds', { request_id: requestId, payment_intent: pi, amount: 8_000 });
  expect(posted.json().status).toBe('QUEUED');
  return posted.json().effect_id as string;
}

async function advance(ms: number): Promise<void> {
  const ana = await world.login('ana');
  expect((await world.as(ana, 'POST', '/api/test/clock', { advance_ms: ms })).statusCode).toBe(200);
}

describe('the queue order from the server (GET /api/inbox)', () => {
  it('breached first, the longest overdue at the top of its chain first, then the soonest due; "overdue by" counts from the deadline missed', async () => {
    const first = await queued('order-1');
    const firstDue = (await world.as(await world.login('ana'), 'GET', `/api/items/${first}`)).json().item.due_ms as number;
    await advance(HOUR_MS);
    const second = await queued('order-2');
    const secondDue = (await world.as(await world.login('ana'), 'GET', `/api/items/${second}`)).json().item.due_ms as number;
    await advance(3 * HOUR_MS + 1_000); // first moves up to finance-manager
    await advance(HOUR_MS); // second moves up
    const third = await queued('order-3');
    await advance(3 * HOUR_MS); // first misses finance-manager's deadline: the top of its chain
    await advance(HOUR_MS); // second too; third moves up, breached, with a deadline still ahead
    const fm = await world.login('fm');
    const items = (await world.as(fm, 'GET', '/api/inbox')).json().items as InboxItem[];
    const mine = items.filter((i) => [first, second, third].includes(i.effect_id));
    expect(mine.map((i) => [i.effect_id, i.breach, i.due_ms === null])).toEqual([
      [first, true, true],
      [second, true, true],
      [third, true, false],
    ]);
    // The top of the chain names the deadline it missed there (4 h after the first one), not when the breach was recorded.
    expect(mine[0]!.missed_due_ms).toBe(firstDue + 4 * HOUR_MS);
    expect(mine[1]!.missed_due_ms).toBe(secondDue + 4 * HOUR_MS);
    expect(mine[2]!.missed_due_ms).toBeNull();
    expect(mine[0]!.escalated_at_ms).toBeGreaterThan(mine[0]!.missed_due_ms!);
  });
});
