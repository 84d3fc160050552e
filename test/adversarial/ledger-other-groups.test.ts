import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LedgerPage } from '../../shared/ledger.ts';
import { type AppWorld, buildAppWorld } from '../support/app-world.ts';

// The attack: an approver reads another group's refunds through the ledger. cy (controller) may
// not open an ap-leads item, its Done entry or its receipt (/api/items/:id is 404 to cy), yet the
// ledger gave cy every group's rows (request ids, payment intents, amounts, who decided) and
// /api/ledger/:effect_id/receipt handed over any request's signed receipt.

let world: AppWorld;
let apLeads: { effectId: string; requestId: string };
let policyCleared: { effectId: string; requestId: string };

beforeAll(async () => {
  world = await buildAppWorld();
  const queued = await world.agent('POST', '/v1/refunds', { request_id: 'other-group-1', payment_intent: await world.payment(10_000), amount: 8_000 });
  expect(queued.json().status).toBe('QUEUED');
  apLeads = { effectId: queued.json().effect_id, requestId: 'other-group-1' };
  const cleared = await world.agent('POST', '/v1/refunds', { request_id: 'other-group-2', payment_intent: await world.payment(10_000), amount: 1_000 });
  expect(cleared.json().status).toBe('COMMITTED');
  policyCleared = { effectId: cleared.json().effect_id, requestId: 'other-group-2' };
  await world.services.views.current();
});
afterAll(async () => world.close());

describe('an approver reads the ledger of their own groups only, as their inbox and history', () => {
  it('cy (controller) sees no ap-leads row, in the JSON or the CSV, and gets no ap-leads receipt; nor a request no person saw', async () => {
    const cy = await world.login('cy');
    expect((await world.as(cy, 'GET', `/api/items/${apLeads.effectId}`)).statusCode).toBe(404);
    const page = (await world.as(cy, 'GET', '/api/ledger')).json() as LedgerPage;
    expect(page.rows.map((row) => row.request_id)).not.toContain(apLeads.requestId);
    expect(page.rows.map((row) => row.request_id)).not.toContain(policyCleared.requestId);
    const csv = (await world.as(cy, 'GET', '/api/ledger.csv')).body;
    expect(csv).not.toContain(apLeads.requestId);
    expect(csv).not.toContain(policyCleared.requestId);
    for (const { effectId } of [apLeads, policyCleared]) {
      const receipt = await world.as(cy, 'GET', `/api/ledger/${effectId}/receipt`);
      expect([receipt.statusCode, receipt.json().error?.code]).toEqual([404, 'not_found']);
    }
  });

  it('ana (ap-leads) sees the ap-leads row and its receipt; finance sees every row', async () => {
    const ana = await world.login('ana');
    const anaRows = ((await world.as(ana, 'GET', '/api/ledger')).json() as LedgerPage).rows.map((row) => row.request_id);
    expect(anaRows).toContain(apLeads.requestId);
    expect((await world.as(ana, 'GET', `/api/ledger/${apLeads.effectId}/receipt`)).statusCode).toBe(200);
    expect((await world.as(ana, 'GET', '/api/ledger.csv')).body).toContain(apLeads.requestId);
    const fin = await world.login('fin');
    const finRows = ((await world.as(fin, 'GET', '/api/ledger')).json() as LedgerPage).rows.map((row) => row.request_id);
    expect(finRows).toEqual(expect.arrayContaining([apLeads.requestId, policyCleared.requestId]));
    expect((await world.as(fin, 'GET', `/api/ledger/${policyCleared.effectId}/receipt`)).statusCode).toBe(200);
  });
});
