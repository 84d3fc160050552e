import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Services } from '../../server/app/services.ts';
import { type AppWorld, buildAppWorld } from '../support/app-world.ts';

// A restart after an outage, through the server's own wiring (services.ts): start-up and the
// ticker read only the chains that can need work, and a deadline missed while the server was
// down is still escalated on the first tick.

const HOUR_MS = 3_600_000;

let world: AppWorld;
let restarted: AppWorld | null = null;
beforeAll(async () => {
  world = await buildAppWorld();
});
afterAll(async () => {
  await restarted?.close();
  await world.close();
});

/** A second server on the same journal and Stripe, its chain reads counted from the start. */
async function restart(): Promise<{ services: Services; reads: string[] }> {
  const reads: string[] = [];
  restarted = await buildAppWorld({
    dir: world.dir,
    clock: world.clock,
    sandbox: world.sandbox,
    beforeStart: (services) => {
      const entries = services.journal.entries.bind(services.journal);
      vi.spyOn(services.journal, 'entries').mockImplementation(async (effectId) => {
        reads.push(effectId);
        return entries(effectId);
      });
    },
  });
  return { services: restarted.services, reads };
}

describe('restart after an outage: the sweeps read only what can need work', () => {
  it('a deadline missed while the server was down is escalated on the first tick, and no settled chain is read', async () => {
    const settled: string[] = [];
    for (let i = 0; i < 12; i++) {
      const pi = await world.payment(10_000);
      const routine = await world.agent('POST', '/v1/refunds', { request_id: `routine-${i}`, payment_intent: pi, amount: 1_000 });
      expect(routine.json().status).toBe('COMMITTED');
      settled.push(routine.json().effect_id);
    }
    const pi = await world.payment(50_000);
    const judged = await world.agent('POST', '/v1/refunds', { request_id: 'judged-1', payment_intent: pi, amount: 8_000 });
    expect(judged.json().status).toBe('QUEUED');
    const effectId = judged.json().effect_id as string;

    // The server is down for 9 hours: two deadlines of the 4 h SLA pass with no tick.
    world.clock.advance(9 * HOUR_MS);
    const { services, reads } = await restart();
    expect(reads.filter((id) => settled.includes(id))).toEqual([]);

    reads.length = 0;
    expect(await services.inbox.tick()).toEqual(new Map([[effectId, 'finance-manager']]));
    expect(reads).toEqual([effectId]);
    const steps = (await services.journal.entries(effectId)).filter((e) => e.kind === 'ESCALATED');
    expect(steps.map((e) => [e.group, e.level, e.breach, e.due_ms === null])).toEqual([
      ['ap-leads', 0, false, false],
      ['finance-manager', 1, true, false],
      ['finance-manager', 1, true, true],
    ]);

    reads.length = 0;
    expect(await services.inbox.tick()).toEqual(new Map());
    expect(await services.inbox.executeApproved()).toEqual(new Map());
    // Only the chain the escalation moved is read again (the ledger folds a moved chain it does
    // not hold from the journal); no settled chain is.
    expect(reads.filter((id) => id !== effectId)).toEqual([]);
  });
});
