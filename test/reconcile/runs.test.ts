import { createServer } from 'node:net';
import type Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { limits } from '../../shared/limits.ts';
import { ReconciliationRuns } from '../../server/reconcile/runs.ts';
import { sandboxStripe } from '../../server/sandbox/index.ts';
import { type AppWorld, buildAppWorld } from '../support/app-world.ts';
import { busiestWindow, fakePacingClock, heldPacingClock } from './support.ts';

// The runs themselves, on an injected pacing clock: list calls through the real SDK against the
// sandbox, at most 20 in any second; one run at a time per period; a failure said in words.

const DAY_MS = 86_400_000;
const PAYMENTS = 30;
const MANY_REFUNDS = 250;

let world: AppWorld;
let period: { fromMs: number; toMs: number };

beforeAll(async () => {
  world = await buildAppWorld();
  const now = world.clock.wallMs();
  period = { fromMs: now - DAY_MS, toMs: now + DAY_MS };
  for (let i = 0; i < PAYMENTS; i++) {
    const answer = await world.agent('POST', '/v1/refunds', { request_id: `pace-${i}`, payment_intent: await world.payment(5_000), amount: 1_000 });
    expect(answer.json().status).toBe('COMMITTED');
  }
  const many = await world.payment(100_000);
  const answer = await world.agent('POST', '/v1/refunds', { request_id: 'pace-many', payment_intent: many, amount: 1_000 });
  expect(answer.json().status).toBe('COMMITTED');
  for (let i = 0; i < MANY_REFUNDS; i++) world.sandbox.handRefund(many, 1);
}, 60_000);
afterAll(() => world.close());

describe('reconciliation runs', () => {
  it('list calls go through the SDK auto-pagination at most 20 in any second of the injected clock', async () => {
    const clock = fakePacingClock();
    const stripe = sandboxStripe(world.sandbox.host, world.sandbox.port);
    const calls: number[] = [];
    stripe.on('request', (event: Stripe.RequestEvent) => {
      if (event.method === 'GET' && event.path.startsWith('/v1/refunds')) calls.push(clock.nowMs());
    });
    const runs = new ReconciliationRuns({ journal: world.services.journal, stripe, wallMs: () => world.clock.wallMs(), pacing: clock });
    const { run } = runs.start(period, 'fin');
    await runs.settled(run.id);
    expect(run.state, run.error ?? '').toBe('done');
    // One call per payment, and two more pages for the payment with 251 refunds.
    expect(calls.length).toBe(PAYMENTS + 1 + 2);
    expect(run.result!.by_hand.count).toBe(MANY_REFUNDS);
    expect(run.result!.matched.count).toBe(PAYMENTS + 1);
    expect(busiestWindow(calls)).toBeLessThanOrEqual(20);
    // The bucket's burst goes at once, then it waits: 33 calls take at least (33 - 5) / 15 s.
    expect(calls.slice(0, limits.reconcileListBurst).every((t) => t === calls[0])).toBe(true);
    expect(calls.at(-1)! - calls[0]!).toBeGreaterThanOrEqual(Math.floor(((calls.length - limits.reconcileListBurst) * 1000) / limits.reconcileListsPerSecond) - 1);
  });

  it('a second start for a period while its run is running answers that run; another period gets its own', async () => {
    const clock = heldPacingClock();
    const runs = new ReconciliationRuns({ journal: world.services.journal, stripe: world.sandbox.stripe(), wallMs: () => world.clock.wallMs(), pacing: clock });
    const first = runs.start(period, 'fin');
    expect(first.started).toBe(true);
    // The burst is spent and the run waits for a token: mid-listing.
    await until(() => clock.sleeping() > 0);
    expect(first.run.progress).toMatchObject({ phase: 'listing_stripe', payment_intents_total: PAYMENTS + 1 });
    expect(first.run.progress.payment_intents_done).toBeLessThan(PAYMENTS + 1);
    const again = runs.start(period, 'ana');
    expect([again.started, again.run.id, again.run.started_by]).toEqual([false, first.run.id, 'fin']);
    const other = runs.start({ fromMs: period.fromMs, toMs: period.toMs + 1 }, 'ana');
    expect(other.started).toBe(true);
    expect(other.run.id).not.toBe(first.run.id);
    while (first.run.state === 'running' || other.run.state === 'running') {
      clock.release();
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    expect([first.run.state, other.run.state]).toEqual(['done', 'done']);
    expect(runs.list().map((run) => run.id)).toEqual([other.run.id, first.run.id]);
    // Finished: the next start is a new run.
    const next = runs.start(period, 'fin');
    expect(next.started).toBe(true);
    expect(next.run.id).not.toBe(first.run.id);
    for (; next.run.state === 'running'; await new Promise((resolve) => setTimeout(resolve, 5))) clock.release();
  });

  it('a Stripe that cannot be reached fails the run with a sentence, never the exception text', async () => {
    const port = await closedPort();
    const runs = new ReconciliationRuns({
      journal: world.services.journal,
      stripe: sandboxStripe('127.0.0.1', port),
      wallMs: () => world.clock.wallMs(),
      pacing: fakePacingClock(),
    });
    const { run } = runs.start(period, 'fin');
    await runs.settled(run.id);
    expect(run).toMatchObject({ state: 'failed', result: null, counts: null });
    expect(run.error).toBe('Stripe could not be read (StripeConnectionError); nothing was changed. Start the run again.');
    expect(run.finished_at_ms).not.toBeNull();
  });
});

describe('reconciliation runs kept and running', () => {
  /** Runs against a Stripe nobody answers at: each fails at its first list call. */
  async function failingRuns() {
    return new ReconciliationRuns({
      journal: world.services.journal,
      stripe: sandboxStripe('127.0.0.1', await closedPort()),
      wallMs: () => world.clock.wallMs(),
      pacing: fakePacingClock(),
    });
  }
  const periodNumber = (n: number) => ({ fromMs: period.fromMs - n * DAY_MS, toMs: period.toMs - n * DAY_MS });

  it('a run that fails gives its slot back: with every slot taken by runs that fail, another period may start once they have', async () => {
    const runs = await failingRuns();
    const started = Array.from({ length: limits.reconcileRunsRunningMax }, (_, n) => runs.start(periodNumber(n), 'fin').run);
    expect(runs.mayStart(periodNumber(99))).toBe(false);
    for (const run of started) await runs.settled(run.id);
    expect(started.map((run) => run.state)).toEqual(started.map(() => 'failed'));
    expect(runs.mayStart(periodNumber(99))).toBe(true);
  });

  it('only the last runs are kept: past limits.reconcileRunsKept the oldest finished one is forgotten', async () => {
    const runs = await failingRuns();
    const ids: string[] = [];
    for (let n = 0; n <= limits.reconcileRunsKept; n++) {
      const { run } = runs.start(periodNumber(n), 'fin');
      await runs.settled(run.id);
      ids.push(run.id);
    }
    expect(runs.list().map((run) => run.id)).toEqual(ids.slice(1).reverse());
    expect(runs.get(ids[0]!)).toBeUndefined();
  });
});

async function until(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 400 && !condition(); i++) await new Promise((resolve) => setTimeout(resolve, 5));
  expect(condition()).toBe(true);
}

/** A local port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}
