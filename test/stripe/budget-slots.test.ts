import { afterEach, describe, expect, it } from 'vitest';
import { SqliteBudgetSlots } from '../../db/budget-slot-store.ts';
import { type BudgetCapacity, BudgetGrant, GLOBAL_FAMILY, StripeBudget } from '../../server/stripe/budget.ts';
import { planFamily, type SlotRow, smallerCapacity, splitSlots } from '../../db/budget-slot-rules.ts';
import type { BudgetSlotStore, SlotRound } from '../../db/port/budget-slots.ts';
import { BudgetSlots, SLOT_HOLD_MS, slotsOf } from '../../server/stripe/budget-slots.ts';
import { CREATE_REFUND, READ_PAYMENT } from '../../server/stripe/paced-client.ts';
import { cleanUpDatabases, openTempDatabase } from '../support/db-journals.ts';
import { FakeScheduler, settle } from '../support/fake-scheduler.ts';
import { mostInAnyWindow } from '../support/sliding-window.ts';

// Budgets of several processes sharing one account through slot rows in one SQLite file: each
// budget here has its own connection to the file, as each process has, on one simulated clock, so
// a second of Stripe's can be counted exactly. (test/stripe/shared-budget.test.ts runs real processes.)

const started: StripeBudget[] = [];
afterEach(async () => {
  for (const budget of started.splice(0)) await budget.stop();
  cleanUpDatabases();
});

const TEST_MODE: BudgetCapacity = { globalPerWindow: 20, endpointPerWindow: 20 };

/**
 * A store that can be made to fail, as one whose write lock another process holds too long, or to
 * answer `delayMs` late on the clock, as a database on a loaded machine.
 */
function failable(store: BudgetSlotStore, clock: FakeScheduler) {
  let failing = false;
  let delayMs = 0;
  const answer = (round: SlotRound) => (failing ? Promise.reject(new Error('database is locked')) : store.round(round));
  return {
    fail: (on: boolean) => {
      failing = on;
    },
    slow: (ms: number) => {
      delayMs = ms;
    },
    store: {
      round: (round) => (delayMs === 0 ? answer(round) : new Promise((resolve, reject) => clock.after(delayMs, () => answer(round).then(resolve, reject)))),
      close: () => store.close(),
    } satisfies BudgetSlotStore,
  };
}

/** `count` budgets of one account on one file, each with its own connection, on one clock; `capacity` may differ per process. */
function sharedBudgets(count: number, capacity: BudgetCapacity | readonly BudgetCapacity[] = TEST_MODE) {
  const clock = new FakeScheduler();
  const { file } = openTempDatabase();
  const budgets = Array.from({ length: count }, (_, i) => {
    const own = Array.isArray(capacity) ? capacity[i]! : (capacity as BudgetCapacity);
    const store = failable(new SqliteBudgetSlots(file), clock);
    const disagreements: string[] = [];
    const share = new BudgetSlots({
      store: store.store,
      account: 'sandbox http://127.0.0.1:1',
      capacity: own,
      clock,
      holder: `p${i}`,
      onDisagreement: (message) => disagreements.push(message),
    });
    const budget = new StripeBudget({ capacity: own, clock, share });
    budget.start();
    started.push(budget);
    return { budget, share, store, disagreements, starts: [] as number[] };
  });
  return { clock, budgets };
}

/** Calls as Stripe counts them: each waits for its place, starts, and is answered `latencyMs` later. */
function callMany(clock: FakeScheduler, entry: { budget: StripeBudget; starts: number[] }, calls: number, endpoints = [READ_PAYMENT], latencyMs = 40) {
  for (let i = 0; i < calls; i++) {
    void entry.budget.take('request', endpoints).then((grant) => {
      for (const endpoint of endpoints) {
        const place = grant.use(endpoint);
        if (place === null) throw new Error('a grant just given could not start');
        entry.starts.push(clock.nowMs());
        clock.after(latencyMs, () => place.finished());
      }
    });
  }
}

describe('splitSlots', () => {
  it.each([
    ['four that want all split it evenly', 20, { a: 20, b: 20, c: 20, d: 20 }, { a: 5, b: 5, c: 5, d: 5 }],
    ['one that wants little gets it, the other the rest', 20, { a: 3, b: 20 }, { a: 3, b: 17 }],
    ['one alone gets what it wants, and no more', 20, { a: 3 }, { a: 3 }],
    ['what nobody wants stays free', 20, { a: 2, b: 2 }, { a: 2, b: 2 }],
    ['a remainder goes to the first in holder order', 20, { c: 20, a: 20, b: 20 }, { a: 7, b: 7, c: 6 }],
  ])('%s', (_why, slots, wants, split) => {
    const given = splitSlots(slots, Object.entries(wants).map(([holder, want]) => ({ holder, slots: want })));
    expect(Object.fromEntries(given)).toEqual(split);
  });

  it('cuts a large capacity into at most 100 slots', () => {
    expect(slotsOf(20)).toEqual({ slots: 20, size: 1 });
    expect(slotsOf(10_000)).toEqual({ slots: 100, size: 100 });
    expect(slotsOf(250)).toEqual({ slots: 83, size: 3 });
  });
});

describe('planFamily', () => {
  const rows = (holders: string[], expiresMs = 10_000): SlotRow[] => holders.map((holder, slot) => ({ slot, holder, expiresMs }));

  it('gives back beyond its share only what its places do not need', () => {
    const plan = planFamily('a', 0, { family: GLOBAL_FAMILY, slots: 4, want: 4, need: 3, capacity: 4 }, rows(['a', 'a', 'a', 'a']), [
      { holder: 'a', slots: 4 },
      { holder: 'b', slots: 4 },
    ]);
    expect(plan).toEqual({ take: [], keep: [0, 1, 2], release: [3], target: 2 });
  });

  it('takes a slot given back or expired, never one another holds', () => {
    const held = [...rows(['b', '', 'c']), { slot: 3, holder: 'd', expiresMs: 5_000 }];
    const plan = planFamily('a', 5_000, { family: GLOBAL_FAMILY, slots: 4, want: 4, need: 0, capacity: 4 }, held, [{ holder: 'a', slots: 4 }]);
    expect(plan).toEqual({ take: [1, 3], keep: [], release: [], target: 4 });
  });

  it('finds the live process configured for the smallest capacity below its own, ignoring rows that do not say', () => {
    const ask = { family: GLOBAL_FAMILY, slots: 80, want: 80, need: 0, capacity: 80 };
    const live = [
      { holder: 'a', slots: 80, capacity: 80 },
      { holder: 'b', slots: 20, capacity: 20 },
      { holder: 'c', slots: 5, capacity: 10 },
      { holder: 'd', slots: 5, capacity: 0 },
    ];
    expect(smallerCapacity('a', ask, live)).toEqual({ holder: 'c', capacity: 10 });
    expect(smallerCapacity('c', { ...ask, capacity: 10 }, live)).toBeUndefined();
    expect(smallerCapacity('a', ask, [{ holder: 'a', slots: 80, capacity: 80 }, { holder: 'e', slots: 1, capacity: 100 }])).toBeUndefined();
  });

  it('an idle holder keeps only what its places need', () => {
    const plan = planFamily('a', 0, { family: GLOBAL_FAMILY, slots: 3, want: 0, need: 1, capacity: 3 }, rows(['a', 'a', 'a']), []);
    expect(plan).toEqual({ take: [], keep: [0], release: [1, 2], target: 0 });
  });
});

describe('budgets sharing one account through slots', () => {
  it('a process alone has the whole capacity a few ms after its first call', async () => {
    const { clock, budgets } = sharedBudgets(1);
    const [alone] = budgets;
    callMany(clock, alone!, 20);
    await clock.advance(5);
    expect(alone!.starts).toHaveLength(20);
    expect(alone!.share.held().get(GLOBAL_FAMILY)).toBe(20);
  });

  it('four processes with calls waiting start no more than the capacity in any second together, and each gets a fair share', async () => {
    const { clock, budgets } = sharedBudgets(4);
    // The first asks alone and holds everything; the others come a little later.
    callMany(clock, budgets[0]!, 400);
    await clock.advance(300);
    for (const entry of budgets.slice(1)) callMany(clock, entry, 400);
    await clock.advance(2_000);
    // While they wait, each counts on a quarter of the capacity (what Retry-After is told).
    for (const { budget } of budgets) expect(budget.expectedCapacity().globalPerWindow).toBe(5);
    await clock.advance(13_000);
    const all = budgets.flatMap((b) => b.starts);
    expect(mostInAnyWindow(all)).toBeLessThanOrEqual(20);
    // After the first has given back what its calls no longer held, each starts about a quarter.
    const later = budgets.map((b) => b.starts.filter((ms) => ms >= all[0]! + 3_000).length);
    const mean = later.reduce((a, b) => a + b, 0) / later.length;
    for (const n of later) expect(n).toBeGreaterThan(mean * 0.8);
    // And the account's capacity is used: 20 a second less what the handovers cost.
    expect(all.length).toBeGreaterThan(15 * 15);
  });

  it('a process that cannot renew stops starting calls a second and more before its slots lapse, and another takes them after', async () => {
    const { clock, budgets } = sharedBudgets(2);
    const [stalled, other] = budgets;
    callMany(clock, stalled!, 200);
    await clock.advance(1_000);
    stalled!.store.fail(true);
    // A grant taken before and used late must not start once the slots may lapse.
    let late: BudgetGrant | null = null;
    void stalled!.budget.take('send', [CREATE_REFUND]).then((grant) => {
      late = grant;
    });
    callMany(clock, other!, 200);
    await clock.advance(SLOT_HOLD_MS + 2_000);
    expect(late).not.toBeNull();
    expect(late!.use(CREATE_REFUND)).toBeNull();
    const stalledLast = Math.max(...stalled!.starts);
    const otherFirst = Math.min(...other!.starts);
    expect(otherFirst - stalledLast).toBeGreaterThanOrEqual(1_000);
    expect(mostInAnyWindow([...stalled!.starts, ...other!.starts])).toBeLessThanOrEqual(20);
    expect(other!.share.held().get(GLOBAL_FAMILY)).toBe(20);
  });

  it('an idle process gives every slot back, so the next to ask has the whole capacity at once', async () => {
    const { clock, budgets } = sharedBudgets(2);
    const [first, second] = budgets;
    callMany(clock, first!, 5);
    await clock.advance(3_000);
    expect(first!.share.held().get(GLOBAL_FAMILY) ?? 0).toBe(0);
    callMany(clock, second!, 20);
    await clock.advance(5);
    expect(second!.starts).toHaveLength(20);
  });

  /** A request's two Stripe calls asked of `entry`'s budget with 50 ms to wait: `grant` once answered (null: refused), undefined until then. */
  const askRequest = (entry: { budget: StripeBudget }) => {
    const asked: { grant: BudgetGrant | null | undefined } = { grant: undefined };
    void entry.budget.takeWithin('request', [READ_PAYMENT, CREATE_REFUND], 50).then((grant) => {
      asked.grant = grant;
    });
    return asked;
  };

  it('a new request waits for its share to be known, not a fixed 50 ms: a round answered late still grants it at once, and a known full window still refuses it', async () => {
    const { clock, budgets } = sharedBudgets(2);
    const [idle, busy] = budgets;
    // An idle process holds no slot: its first call's room is known only once its round is answered, here 80 ms later.
    idle!.store.slow(80);
    const answer = askRequest(idle!);
    await clock.advance(50);
    expect(answer.grant).toBeUndefined();
    await clock.advance(31);
    expect(answer.grant).toBeInstanceOf(BudgetGrant);
    answer.grant!.release();
    // A first round that fails (the store busy) is tried again; the request waits for the answer.
    busy!.store.fail(true);
    busy!.store.slow(100);
    const second = askRequest(busy!);
    await clock.advance(101);
    expect(second.grant).toBeUndefined();
    busy!.store.fail(false);
    busy!.store.slow(0);
    await clock.advance(25);
    expect(second.grant).toBeInstanceOf(BudgetGrant);
    // Once the share is known and its places are taken, the request waits its turn after 50 ms, as alone.
    idle!.store.slow(0);
    callMany(clock, idle!, 40);
    await clock.advance(30);
    const full = askRequest(idle!);
    await clock.advance(50);
    expect(full.grant).toBeNull();
  });

  it('endpoints below the account limit have slots too: four processes create no more than 20 refunds in any second of a live account', async () => {
    const { clock, budgets } = sharedBudgets(4, { globalPerWindow: 80, endpointPerWindow: 20 });
    for (const entry of budgets) callMany(clock, entry, 100, [CREATE_REFUND]);
    await clock.advance(10_000);
    const all = budgets.flatMap((b) => b.starts);
    expect(mostInAnyWindow(all)).toBeLessThanOrEqual(20);
    for (const entry of budgets) expect(entry.starts.length).toBeGreaterThan(20);
  });

  it('two processes configured for different limits: the larger yields while the smaller has calls, says so, and the sum stays within the smaller', async () => {
    const { clock, budgets } = sharedBudgets(2, [{ globalPerWindow: 80, endpointPerWindow: 80 }, TEST_MODE]);
    const [larger, smaller] = budgets;
    callMany(clock, larger!, 2_000);
    await clock.advance(2_000);
    // Alone, the larger uses what it is configured for.
    expect(mostInAnyWindow(larger!.starts)).toBeGreaterThan(60);
    const joinedMs = clock.nowMs();
    callMany(clock, smaller!, 200);
    await clock.advance(8_000);
    // Within two seconds of the smaller's first call, the larger has given back what its places no longer hold.
    const after = [...larger!.starts, ...smaller!.starts].filter((ms) => ms >= joinedMs + 2_000);
    expect(mostInAnyWindow(after)).toBeLessThanOrEqual(20);
    expect(smaller!.starts.length).toBeGreaterThan(100);
    expect(larger!.disagreements.at(-1)).toMatch(/budgets the account of Stripe account "sandbox http:\/\/127\.0\.0\.1:1" at 20 calls a second, this one at 80/);
    expect(smaller!.disagreements).toEqual([]);
    // Once the smaller has nothing to send, the larger has its own limits again.
    await clock.advance(5_000);
    const resumedMs = clock.nowMs();
    await clock.advance(3_000);
    expect(mostInAnyWindow(larger!.starts.filter((ms) => ms >= resumedMs))).toBeGreaterThan(60);
  });

  it('stop gives back every slot its calls out do not need', async () => {
    const { clock, budgets } = sharedBudgets(2);
    const [first, second] = budgets;
    callMany(clock, first!, 20);
    await clock.advance(5);
    await clock.advance(1_100);
    await first!.budget.stop();
    callMany(clock, second!, 20);
    await clock.advance(5);
    await settle();
    expect(second!.starts).toHaveLength(20);
  });
});
