import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { InboxItem } from '../../shared/api.ts';
import { AppClock } from '../../server/app/clock.ts';
import { startSandbox } from '../../server/sandbox/index.ts';
import { askForDemoRefund, tallyJournaledDemoRequests } from '../../server/demo/ask.ts';
import type { DemoPlan } from '../../server/demo/plan.ts';
import { type DemoLog, runDemoTraffic, startDemoTraffic } from '../../server/demo/traffic.ts';
import { type AppWorld, buildAppWorld } from '../support/app-world.ts';
import { PyRandom } from '../support/py-random.ts';
import { ManualTimers } from './manual-timers.ts';

// Demo traffic over the whole server in process (real inbox, journal, views and sandbox), on
// injected timers: its requests are an agent's requests, journaled and shown as the agent demo's.

const worlds: AppWorld[] = [];
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const world of worlds.splice(0).reverse()) await world.close();
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

async function world(options: Parameters<typeof buildAppWorld>[0] = {}): Promise<AppWorld> {
  const built = await buildAppWorld(options);
  worlds.push(built);
  return built;
}

const quiet: DemoLog = { info: () => {}, warn: () => {} };

function seeded(seed: number): () => number {
  const random = new PyRandom(seed);
  return () => random.random();
}

/** Fire the pending timer and wait for its beat to set the next one. */
async function beat(timers: ManualTimers): Promise<void> {
  const before = timers.delays.length;
  timers.fire();
  await vi.waitFor(() => expect(timers.delays.length).toBeGreaterThan(before), { interval: 2, timeout: 5_000 });
}

describe('demo requests in a real server', () => {
  it('each kind lands as it should: routine clears with no person, over $50 and disputed wait for a person, stale finds its payment refunded by hand', async () => {
    const w = await world();
    const timers = new ManualTimers();
    const asked: Array<{ requestId: string; plan: DemoPlan; paymentIntent: string; status: string }> = [];
    const warnings: string[] = [];
    const traffic = runDemoTraffic({
      tally: () => tallyJournaledDemoRequests(w.services),
      ask: async (requestId, plan) => {
        const outcome = await askForDemoRefund(w.services, w.sandbox, requestId, plan);
        asked.push({ requestId, plan, ...outcome });
        return outcome;
      },
      available: () => true,
      timers,
      random: seeded(5),
      log: { info: () => {}, warn: (_fields, message) => warnings.push(message) },
      onFinished: () => {},
    });
    for (let i = 0; i < 11; i++) await beat(timers);
    await traffic.stop();
    expect(warnings).toEqual([]);
    expect(new Set(asked.map((a) => a.plan.kind))).toEqual(new Set(['routine', 'over_limit', 'stale', 'disputed']));

    const { inbox } = await w.services.views.current();
    const items = inbox.queue(new Set(Object.keys(w.services.config.groups)));
    const bound = new Map(Array.from(await inbox.everySummary(), (summary) => [summary.request?.id, summary.request]));
    const itemOf = (requestId: string): InboxItem | undefined => items.find((item) => item.request.id === requestId);
    for (const { requestId, plan, paymentIntent, status } of asked) {
      const handRefunds = w.sandbox.refunds(paymentIntent).filter((r) => r.metadata?.interlock_effect_id === undefined);
      switch (plan.kind) {
        case 'routine':
          expect([requestId, status]).toEqual([requestId, 'COMMITTED']);
          expect(w.sandbox.refunds(paymentIntent).map((r) => r.amount)).toEqual([plan.amountCents]);
          expect(itemOf(requestId)).toBeUndefined();
          break;
        case 'over_limit':
          expect([requestId, status]).toEqual([requestId, 'QUEUED']);
          expect(itemOf(requestId)?.detail).toContain("amount within its currency's limit");
          expect(itemOf(requestId)?.why).toContain('over $50.00');
          break;
        case 'disputed':
          expect([requestId, status]).toEqual([requestId, 'QUEUED']);
          expect(itemOf(requestId)).toMatchObject({ facts: { disputed: true } });
          expect(itemOf(requestId)?.detail).toEqual(['payment not disputed']);
          break;
        case 'stale':
          expect([requestId, status]).toEqual([requestId, 'QUEUED']);
          expect(handRefunds.map((r) => r.amount)).toEqual([plan.handRefundCents]);
          break;
      }
      // Exactly as an agent's request: the payload bound under the agent demo and its own id.
      expect(bound.get(requestId)).toEqual({ id: requestId, agent: 'demo', payment_intent: paymentIntent, amount: plan.amountCents, ...(plan.reason === null ? {} : { reason: plan.reason }), flags: [...new Set(plan.flags)].sort() });
      if (itemOf(requestId)) expect(itemOf(requestId)?.request).toEqual(bound.get(requestId));
    }

    // A person who approves a stale one is told the facts changed, and offered a repair.
    const stale = asked.find((a) => a.plan.kind === 'stale')!;
    const item = itemOf(stale.requestId)!;
    const person = await w.login(w.services.config.groups[item.group]![0]!);
    const decided = (await w.as(person, 'POST', `/api/items/${item.effect_id}/decisions`, { action: 'approve', escalation: item.escalation })).json();
    expect(decided.status).toBe('REFUSED:stale_premise');
    expect(decided.item.item.changes).toContainEqual({ field: 'refunded_outside', was: 0, now: stale.plan.handRefundCents });
    expect(w.sandbox.refunds(stale.paymentIntent)).toHaveLength(1);
  });

  it('the session says demo traffic runs while it does; a restart on the same data folder goes on from the journal', async () => {
    // The data folder, clock and sandbox outlive the first server, as they do across a restart.
    const dir = mkdtempSync(join(tmpdir(), 'interlock-demo-'));
    const clock = new AppClock();
    const sandbox = await startSandbox({ clockMs: () => clock.wallMs() });
    cleanups.push(async () => {
      await sandbox.close();
      rmSync(dir, { recursive: true, force: true });
    });
    const first = await world({ dir, clock, sandbox });
    const ana = await first.login('ana');
    const session = async (w: AppWorld, who = ana) => (await w.as(who, 'GET', '/api/session')).json();
    expect(await session(first)).toMatchObject({ sandbox: true, demo: false });
    const timers = new ManualTimers();
    const traffic = startDemoTraffic({ services: first.services, sandbox: first.sandbox, log: quiet, timers, random: seeded(9) });
    expect(await session(first)).toMatchObject({ demo: true });
    for (let i = 0; i < 3; i++) await beat(timers);
    await traffic.stop();
    expect(timers.pending).toBe(0);
    expect(await session(first)).toMatchObject({ demo: false });
    expect(await tallyJournaledDemoRequests(first.services)).toEqual({ count: 3, lastNumber: 3 });
    // The agents' own requests are not demo traffic.
    const pi = await first.payment(10_000);
    expect((await first.agent('POST', '/v1/refunds', { request_id: 'demo-77', payment_intent: pi, amount: 1_000 })).statusCode).toBe(200);
    expect(await tallyJournaledDemoRequests(first.services)).toEqual({ count: 3, lastNumber: 3 });

    await first.close();
    worlds.splice(worlds.indexOf(first), 1);
    const again = await world({ dir, clock, sandbox });
    const lines: string[] = [];
    const timersAgain = new ManualTimers();
    const going = startDemoTraffic({ services: again.services, sandbox, log: { info: (m) => lines.push(m), warn: (_f, m) => lines.push(m) }, timers: timersAgain, random: seeded(9) });
    await beat(timersAgain);
    await going.stop();
    expect(lines.slice(0, 2)).toEqual([
      'demo traffic: an agent named demo asks for a refund every 10–30 s, at most 200; INTERLOCK_DEMO=0 turns it off',
      'demo traffic: 3 demo requests already in this data folder; going on from demo-4',
    ]);
    expect(lines[2]).toMatch(/^demo traffic: demo-4 asks /);
    expect(await tallyJournaledDemoRequests(again.services)).toEqual({ count: 4, lastNumber: 4 });
  });
});
