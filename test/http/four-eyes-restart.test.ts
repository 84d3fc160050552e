import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Entry } from '../../shared/entries.ts';
import { type AppWorld, buildAppWorld, testConfig } from '../support/app-world.ts';

// A restart between the two approvals of a four-eyes item, and between the second approval and
// its send: start-up recovery sends nothing on one approval, and sends a recorded second approval
// only while both are still live.

const MINUTE_MS = 60_000;
const config = (() => {
  const base = testConfig();
  // No deadline, so a restart hours later moves nothing up and only the approvals' age counts.
  return { ...base, routes: base.routes.map((r) => (r.name === 'default' ? { ...r, twoApproversFrom: { usd: 10_000 }, slaMs: null } : r)) };
})();

let world: AppWorld;
const restarts: AppWorld[] = [];
beforeAll(async () => {
  world = await buildAppWorld({ config });
});
afterAll(async () => {
  for (const r of restarts) await r.close();
  await world.close();
});

/** A second server on the same journal, clock and Stripe: start-up recovery runs before it answers. */
async function restart(): Promise<AppWorld> {
  const again = await buildAppWorld({ config, dir: world.dir, clock: world.clock, sandbox: world.sandbox });
  restarts.push(again);
  return again;
}

async function queued(requestId: string) {
  const pi = await world.payment(20_000);
  const posted = await world.agent('POST', '/v1/refunds', { request_id: requestId, payment_intent: pi, amount: 15_000 });
  expect(posted.json().status).toBe('QUEUED');
  return posted.json().effect_id as string;
}

async function escalationOf(w: AppWorld, effectId: string): Promise<string> {
  const chain = await w.services.journal.entries(effectId);
  return chain.filter((e) => e.kind === 'ESCALATED').at(-1)!.hash;
}

const sends = (chain: readonly Entry[]) => chain.filter((e) => e.kind === 'DISPATCHED' || e.kind === 'COMMITTED').length;

describe('four-eyes across a restart', () => {
  it('a restart after the first approval sends nothing; the second approval, on the restarted server, sends it', async () => {
    const effectId = await queued('fe-restart-half');
    expect(await world.services.inbox.approve(effectId, 'ana', { seen: await escalationOf(world, effectId) })).toBe('PARTLY_APPROVED');
    const after = await restart();
    expect(sends(await after.services.journal.entries(effectId))).toBe(0);
    expect((await after.agent('GET', '/v1/refunds/fe-restart-half')).json()).toMatchObject({ status: 'QUEUED', decision: null, approvals: { given: [{ by: 'Ana Lopez' }] } });
    expect(await after.services.inbox.approve(effectId, 'bea', { seen: await escalationOf(after, effectId) })).toBe('COMMITTED');
  });

  it('a recorded second approval is not sent at recovery once the first expired: the item goes back to people, saying so', async () => {
    const effectId = await queued('fe-restart-lapsed');
    const seen = await escalationOf(world, effectId);
    expect(await world.services.inbox.approve(effectId, 'ana', { seen })).toBe('PARTLY_APPROVED');
    world.clock.advance(200 * MINUTE_MS);
    // Recorded, and the process stops before the send.
    expect(await world.services.inbox.approve(effectId, 'bea', { seen, execute: false })).toBe('APPROVED');
    world.clock.advance(60 * MINUTE_MS);
    const after = await restart();
    const chain = await after.services.journal.entries(effectId);
    expect(chain.some((e) => e.kind === 'COMMITTED')).toBe(false);
    const answer = (await after.agent('GET', '/v1/refunds/fe-restart-lapsed')).json();
    expect(answer).toMatchObject({ status: 'QUEUED', approvals: { required: 2, given: [] } });
    expect(chain.filter((e) => e.kind === 'ESCALATED').at(-1)).toMatchObject({ reason: 'approval_expired', approvals_required: 2 });
  });
});
