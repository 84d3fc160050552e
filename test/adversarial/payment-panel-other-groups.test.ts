import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ItemPage } from '../../server/http/item-detail.ts';
import { type AppWorld, buildAppWorld } from '../support/app-world.ts';

// The attack: an approver reads another group's requests through an item's payment panel. Three
// refunds on one payment: one cleared by the rules (no person saw it), one the controller approved,
// and one waiting for ap-leads. ana (ap-leads) may not open the other two items, nor see them in
// the ledger, yet the panel of her item named the request behind each of the payment's refunds.

let world: AppWorld;
let payment: string;
let apLeadsItem: string;
let controllerItem: string;

beforeAll(async () => {
  world = await buildAppWorld();
  payment = await world.payment(100_000);
  const cleared = await world.agent('POST', '/v1/refunds', { request_id: 'panel-rules-cleared', payment_intent: payment, amount: 1_000 });
  expect(cleared.json().status).toBe('COMMITTED');
  const large = await world.agent('POST', '/v1/refunds', { request_id: 'panel-controller', payment_intent: payment, amount: 30_000 });
  expect(large.json().status).toBe('QUEUED');
  controllerItem = large.json().effect_id;
  const cy = await world.login('cy');
  const seen = (await world.as(cy, 'GET', `/api/items/${controllerItem}`)).json() as ItemPage;
  const approved = await world.as(cy, 'POST', `/api/items/${controllerItem}/decisions`, { action: 'approve', escalation: seen.item!.escalation });
  expect(approved.json().status).toBe('COMMITTED');
  const waiting = await world.agent('POST', '/v1/refunds', { request_id: 'panel-ap-leads', payment_intent: payment, amount: 8_000 });
  expect(waiting.json().status).toBe('QUEUED');
  apLeadsItem = waiting.json().effect_id;
  await world.services.views.current();
}, 60_000);
afterAll(async () => world.close());

describe('an item’s payment panel names only requests its reader may see', () => {
  it('ana sees both refunds on her item’s payment, made by Interlock, but not which requests they were', async () => {
    const ana = await world.login('ana');
    expect((await world.as(ana, 'GET', `/api/items/${controllerItem}`)).statusCode).toBe(404);
    const page = (await world.as(ana, 'GET', `/api/items/${apLeadsItem}`)).json() as ItemPage;
    expect(page.payment?.refunds.map((r) => [r.amount, r.by])).toEqual([
      [1_000, 'interlock'],
      [30_000, 'interlock'],
    ]);
    expect(page.payment?.refunds.map((r) => r.request_id)).toEqual([null, null]);
    expect(page.payment_error).toBeNull();
  });

  it('cy sees the request cy approved on that payment, and not the one the rules cleared', async () => {
    const cy = await world.login('cy');
    const page = (await world.as(cy, 'GET', `/api/items/${controllerItem}`)).json() as ItemPage;
    expect(page.payment?.refunds.map((r) => r.request_id)).toEqual([null, 'panel-controller']);
  });

  it('finance, who reads every request, sees each by name, even from the panel ana’s page read first', async () => {
    const fin = await world.login('fin');
    const page = (await world.as(fin, 'GET', `/api/items/${apLeadsItem}`)).json() as ItemPage;
    expect(page.payment?.refunds.map((r) => r.request_id)).toEqual(['panel-rules-cleared', 'panel-controller']);
  });
});
