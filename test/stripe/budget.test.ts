import { describe, expect, it } from 'vitest';
import { BUDGET_PENALTY_MS, type BudgetClass, type BudgetGrant, capacityFor, StripeBudget } from '../../server/stripe/budget.ts';
import { CREATE_REFUND, endpointOf, READ_PAYMENT } from '../../server/stripe/paced-client.ts';
import { FakeScheduler, settle } from '../support/fake-scheduler.ts';
import { mostInAnyWindow } from '../support/sliding-window.ts';

// The one Stripe budget: no more than its capacity starts in any sliding second, globally and per
// endpoint; classes are served by their floor shares and lend what they do not use.

function budgetOn(clock: FakeScheduler, globalPerWindow: number, endpointPerWindow = globalPerWindow) {
  return new StripeBudget({ capacity: { globalPerWindow, endpointPerWindow }, clock });
}

describe('capacityFor', () => {
  it.each([
    ['test', 0.8, 20, 20],
    ['live', 0.8, 80, 20],
    ['test', 1, 25, 25],
    ['live', 0.5, 50, 12],
  ] as const)('%s mode at a share of %s allows %i a second and %i per endpoint', (mode, share, global, endpoint) => {
    expect(capacityFor(mode, share)).toEqual({ globalPerWindow: global, endpointPerWindow: endpoint });
  });

  it('an account whose limits Stripe raised is given them, at the share', () => {
    expect(capacityFor('live', 0.8, { globalPerWindow: 500, endpointPerWindow: 100 })).toEqual({ globalPerWindow: 400, endpointPerWindow: 80 });
  });
});

describe('StripeBudget', () => {
  it('lets no more than its capacity start in any sliding second, however the calls arrive', async () => {
    const clock = new FakeScheduler();
    const budget = budgetOn(clock, 20);
    const starts: number[] = [];
    for (let i = 0; i < 150; i++) {
      void budget.take('request', [READ_PAYMENT]).then((grant) => {
        // Used a little later than granted: the place is held until then, and counts a second from then.
        clock.after(37, () => {
          grant.use(READ_PAYMENT)?.finished();
          starts.push(clock.nowMs());
        });
      });
      if (i % 7 === 0) await clock.advance(13);
    }
    await clock.advance(20_000);
    expect(starts).toHaveLength(150);
    expect(mostInAnyWindow(starts)).toBeLessThanOrEqual(20);
  });

  it('counts each endpoint against its own limit too', async () => {
    const clock = new FakeScheduler();
    const budget = budgetOn(clock, 80, 20);
    const creates: number[] = [];
    const reads: number[] = [];
    for (let i = 0; i < 60; i++) {
      void budget.take('request', [READ_PAYMENT, CREATE_REFUND]).then((grant) => {
        grant.use(READ_PAYMENT)?.finished();
        reads.push(clock.nowMs());
        grant.use(CREATE_REFUND)?.finished();
        creates.push(clock.nowMs());
      });
    }
    await clock.advance(10_000);
    expect(creates).toHaveLength(60);
    expect(mostInAnyWindow(creates)).toBe(20);
    expect(mostInAnyWindow(reads)).toBe(20);
  });

  it('a grant not used holds its place until it is used or given back', async () => {
    const clock = new FakeScheduler();
    const budget = budgetOn(clock, 1);
    const held = await budget.take('send', [CREATE_REFUND]);
    let second: BudgetGrant | null = null;
    void budget.take('send', [CREATE_REFUND]).then((g) => {
      second = g;
    });
    await clock.advance(5_000);
    expect(second).toBeNull();
    held.release();
    await settle();
    expect(second).not.toBeNull();
  });

  it('a started call keeps its place for one second after it started', async () => {
    const clock = new FakeScheduler();
    const budget = budgetOn(clock, 1);
    const first = await budget.take('send', [CREATE_REFUND]);
    await clock.advance(400);
    first.use(CREATE_REFUND)?.finished();
    let grantedAtMs = 0;
    void budget.take('send', [CREATE_REFUND]).then(() => {
      grantedAtMs = clock.nowMs();
    });
    const startedMs = clock.nowMs();
    await clock.advance(3_000);
    expect(grantedAtMs - startedMs).toBeGreaterThanOrEqual(1_000);
    expect(grantedAtMs - startedMs).toBeLessThan(1_300);
  });

  it('while a call is out for seconds and another waits, the budget looks again a few times a second, not every millisecond', async () => {
    const clock = new FakeScheduler();
    let timers = 0;
    const counted = {
      nowMs: () => clock.nowMs(),
      after: (ms: number, run: () => void) => {
        timers += 1;
        return clock.after(ms, run);
      },
    };
    const budget = new StripeBudget({ capacity: { globalPerWindow: 1, endpointPerWindow: 1 }, clock: counted });
    const call = (await budget.take('send', [CREATE_REFUND])).use(CREATE_REFUND)!;
    let grantedAtMs = 0;
    void budget.take('send', [CREATE_REFUND]).then(() => {
      grantedAtMs = clock.nowMs();
    });
    await clock.advance(5_000);
    const answeredMs = clock.nowMs();
    call.finished();
    await clock.advance(2_000);
    expect(grantedAtMs - answeredMs).toBeGreaterThanOrEqual(1_000);
    expect(grantedAtMs - answeredMs).toBeLessThan(1_300);
    expect(timers).toBeLessThan(40);
  });

  it('serves a class below its floor first, so background reads are never starved by a flood of sends', async () => {
    const clock = new FakeScheduler();
    const budget = budgetOn(clock, 20);
    const served: Record<BudgetClass, number[]> = { send: [], recovery: [], request: [], background: [] };
    const ask = (klass: BudgetClass) =>
      void budget.take(klass, [READ_PAYMENT]).then((grant) => {
        grant.use(READ_PAYMENT)?.finished();
        served[klass].push(clock.nowMs());
      });
    for (let i = 0; i < 400; i++) ask('send');
    for (let i = 0; i < 5; i++) ask('background');
    await clock.advance(3_000);
    // 5% of 20 is one a second: the background reads go one a second beside the sends.
    expect(served.background.length).toBeGreaterThanOrEqual(3);
    expect(served.send.length).toBeGreaterThanOrEqual(50);
  });

  it('a class alone is lent every share: new requests get the whole capacity when nothing else waits', async () => {
    const clock = new FakeScheduler();
    const budget = budgetOn(clock, 20);
    let granted = 0;
    for (let i = 0; i < 20; i++) void budget.take('request', [READ_PAYMENT]).then(() => granted++);
    await settle();
    expect(granted).toBe(20);
  });

  it('background readers alone take at most half of a second, so a request finds room at once', async () => {
    const clock = new FakeScheduler();
    const budget = budgetOn(clock, 20);
    let background = 0;
    for (let i = 0; i < 40; i++) void budget.take('background', [READ_PAYMENT]).then(() => background++);
    await settle();
    expect(background).toBe(10);
    let request: BudgetGrant | null = null;
    void budget.takeWithin('request', [READ_PAYMENT, CREATE_REFUND], 150).then((g) => {
      request = g;
    });
    await settle();
    expect(request).not.toBeNull();
  });

  it.each([
    ['test', 10],
    ['live', 20],
  ] as const)('lets %s mode’s limits through %i refunds a second: the account’s limit over two calls, or one endpoint’s, whichever is less', (mode, refunds) => {
    const budget = new StripeBudget({ capacity: capacityFor(mode), clock: new FakeScheduler() });
    expect(budget.refundsPerWindow()).toBe(refunds);
    expect(budget.refundsPer(600_000)).toBe(refunds * 600);
  });

  it('halves its capacity for ten seconds after a 429', async () => {
    const clock = new FakeScheduler();
    const budget = budgetOn(clock, 20);
    budget.rateLimited(CREATE_REFUND);
    expect(budget.current()).toEqual({ globalPerWindow: 10, endpointPerWindow: 10 });
    expect(budget.counts.rateLimited).toEqual({ [CREATE_REFUND]: 1 });
    await clock.advance(BUDGET_PENALTY_MS);
    expect(budget.current()).toEqual({ globalPerWindow: 20, endpointPerWindow: 20 });
  });

  it('tryTake answers null when the window is full, and takeWithin leaves the queue when its time is up', async () => {
    const clock = new FakeScheduler();
    const budget = budgetOn(clock, 2);
    expect(budget.tryTake('request', [READ_PAYMENT, CREATE_REFUND])).not.toBeNull();
    expect(budget.tryTake('request', [READ_PAYMENT])).toBeNull();
    let answer: BudgetGrant | null | undefined;
    void budget.takeWithin('request', [READ_PAYMENT], 150).then((g) => {
      answer = g;
    });
    await clock.advance(150);
    expect(answer).toBeNull();
    expect(budget.waiting).toBe(0);
  });
});

describe('endpointOf', () => {
  it.each([
    ['GET', '/v1/payment_intents/pi_123?expand[]=latest_charge.refunds', 'GET /v1/payment_intents/:id'],
    ['POST', '/v1/refunds', 'POST /v1/refunds'],
    ['GET', '/v1/refunds?payment_intent=pi_1&limit=100', 'GET /v1/refunds'],
    ['GET', '/v1/charges/ch_9', 'GET /v1/charges/:id'],
    ['get', '/v1/charges/ch_9/refunds', 'GET /v1/charges/:id/refunds'],
  ])('%s %s counts as %s', (method, path, endpoint) => {
    expect(endpointOf(method, path)).toBe(endpoint);
  });
});
