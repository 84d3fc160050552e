import type Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { factsLimits } from '../../server/facts/limits.ts';
import { type AppWorld, buildAppWorld } from '../support/app-world.ts';

// The attack: finance reads every item of every group, and each GET /api/items/:id read Stripe
// there and then (the payment's facts now, three calls, and its panel, three more, kept a minute
// per item). Finance looping over its Done and Closed lists, or one item asked for a hundred times
// at once, made the server read Stripe as fast as it was asked: the account's read budget, which
// the gate's sends share, spent by a read-only login.

const ITEMS = 6;
const ASKS = 120;

let world: AppWorld;
const effectIds: string[] = [];
const stripeCalls: number[] = [];

beforeAll(async () => {
  world = await buildAppWorld();
  for (let i = 0; i < ITEMS; i++) {
    const posted = await world.agent('POST', '/v1/refunds', { request_id: `page-read-${i}`, payment_intent: await world.payment(100_000), amount: 8_000 });
    expect(posted.json().status).toBe('QUEUED');
    effectIds.push(posted.json().effect_id);
  }
  await world.services.views.current();
  world.services.target.stripe.on('request', (event: Stripe.RequestEvent) => {
    if (event.method === 'GET') stripeCalls.push(Date.now());
  });
}, 60_000);
afterAll(async () => world.close());

describe('item pages read Stripe within a budget', () => {
  it('a flood of item pages from finance reads Stripe at most the item pages’ budget, and every page still answers from the journal', async () => {
    const fin = await world.login('fin');
    const startedMs = Date.now();
    const before = stripeCalls.length;
    const pages = await Promise.all(Array.from({ length: ASKS }, (_, i) => world.as(fin, 'GET', `/api/items/${effectIds[i % ITEMS]}`)));
    const elapsedS = (Date.now() - startedMs) / 1000;
    expect(pages.every((page) => page.statusCode === 200)).toBe(true);
    // Every page says what the journal says, whether Stripe was read for it or not.
    expect(pages.every((page) => page.json().request.amount === 8_000 && page.json().history.length > 0)).toBe(true);
    const reads = factsLimits.itemPageReadsBurst + Math.ceil(factsLimits.itemPageReadsPerSecond * elapsedS);
    // A read is the facts (payment intent, its refunds, its charge) or a panel (payment intent, refunds, disputes): 3 calls.
    expect(stripeCalls.length - before).toBeLessThanOrEqual(reads * 3);
    const unread = pages.filter((page) => page.json().facts_now === null);
    expect(unread.length).toBeGreaterThan(0);
    expect(unread.every((page) => typeof page.json().facts_now_error === 'string')).toBe(true);
  });

  it('once the budget refills, an item page reads Stripe again', async () => {
    const fin = await world.login('fin');
    await new Promise((resolve) => setTimeout(resolve, (1000 * 2) / factsLimits.itemPageReadsPerSecond + 100));
    const page = (await world.as(fin, 'GET', `/api/items/${effectIds[0]}`)).json();
    expect(page.facts_now).toMatchObject({ amount_received: 100_000, refunded_by_others: 0 });
    expect(page.payment).not.toBeNull();
  });
});
