import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AppWorld, buildAppWorld } from '../support/app-world.ts';

// A rejection says why, in the approver's words: journaled with the decision, told to the agent
// in `why` and `decision: {action, by, at, reason}`, with the approver's display name. And when
// two approvers race, the one who lost is told who decided, what and when.

let world: AppWorld;
beforeAll(async () => {
  world = await buildAppWorld();
});
afterAll(async () => world.close());

async function queued(requestId: string) {
  const pi = await world.payment(10_000);
  const posted = await world.agent('POST', '/v1/refunds', { request_id: requestId, payment_intent: pi, amount: 8_000 });
  expect(posted.json().status).toBe('QUEUED');
  const effectId = posted.json().effect_id as string;
  const ana = await world.login('ana');
  const escalation = (await world.as(ana, 'GET', `/api/items/${effectId}`)).json().item.escalation as string;
  return { effectId, escalation, ana };
}

describe('reject takes a reason', () => {
  it.each([
    ['no reason', {}, 'reason: say why, 1 to 500 characters'],
    ['a blank reason', { reason: '   \n ' }, 'reason: say why, 1 to 500 characters'],
    ['501 characters', { reason: 'x'.repeat(501) }, 'reason: say why, 1 to 500 characters'],
    ['a number', { reason: 42 }, 'reason: why, for action reject or close: 1 to 500 characters after trimming; the agent is told it'],
  ])('%s is 400 validation_failed, and nothing is written', async (_name, extra, message) => {
    const { effectId, escalation, ana } = await queued(`rr-${_name.replace(/\W+/g, '-')}`);
    const before = await world.entryCount();
    const answer = await world.as(ana, 'POST', `/api/items/${effectId}/decisions`, { action: 'reject', escalation, ...extra });
    expect([answer.statusCode, answer.json().error]).toEqual([400, { code: 'validation_failed', message }]);
    expect(await world.entryCount()).toBe(before);
  });

  it('an approval carries no reason', async () => {
    const { effectId, escalation, ana } = await queued('rr-approve-reason');
    const answer = await world.as(ana, 'POST', `/api/items/${effectId}/decisions`, { action: 'approve', escalation, reason: 'fine' });
    expect(answer.json().error).toEqual({ code: 'validation_failed', message: 'reason: only for action reject or close' });
  });

  it('is journaled trimmed, and the agent is told it with the approver’s display name', async () => {
    const { effectId, escalation, ana } = await queued('rr-1');
    const answer = await world.as(ana, 'POST', `/api/items/${effectId}/decisions`, { action: 'reject', escalation, reason: '  Outside the 30-day window.  ' });
    expect(answer.json().status).toBe('REJECTED');
    const decided = (await world.services.journal.entries(effectId)).find((e) => e.kind === 'DECIDED');
    expect(decided).toMatchObject({ decision: 'reject', by: 'ana', reason: 'Outside the 30-day window.' });
    const polled = (await world.agent('GET', '/v1/refunds/rr-1')).json();
    expect(polled).toMatchObject({
      status: 'CLOSED',
      why: 'rejected by Ana Lopez: Outside the 30-day window.; it is never sent',
      decision: { action: 'reject', by: 'Ana Lopez', reason: 'Outside the 30-day window.' },
    });
    expect(new Date(polled.decision.at).getTime()).toBe(decided?.kind === 'DECIDED' ? decided.at_ms : Number.NaN);
  });

  it('the Closed list and the item page name a rejection rejected, with its reason, as the ledger does; the agent is still told CLOSED', async () => {
    const { effectId, escalation, ana } = await queued('rr-closed');
    await world.as(ana, 'POST', `/api/items/${effectId}/decisions`, { action: 'reject', escalation, reason: 'Charged back already' });
    const fin = await world.login('fin');
    const closed = (await world.as(fin, 'GET', '/api/closed?q=rr-closed')).json().items;
    expect(closed).toEqual([expect.objectContaining({ effect_id: effectId, status: 'REJECTED', outcome: 'rejected', reject_reason: 'Charged back already' })]);
    expect((await world.as(fin, 'GET', `/api/items/${effectId}`)).json()).toMatchObject({ state: 'CLOSED', outcome: 'rejected' });
    const [row] = (await world.as(fin, 'GET', '/api/ledger?outcome=rejected')).json().rows.filter((r: { request_id: string }) => r.request_id === 'rr-closed');
    expect(row).toMatchObject({ status: 'CLOSED', outcome: 'rejected', reject_reason: 'Charged back already' });
  });

  it('an answer with no person’s decision says decision: null; an approval says who approved', async () => {
    const { effectId, escalation, ana } = await queued('rr-2');
    expect((await world.agent('GET', '/v1/refunds/rr-2')).json().decision).toBeNull();
    await world.as(ana, 'POST', `/api/items/${effectId}/decisions`, { action: 'approve', escalation });
    expect((await world.agent('GET', '/v1/refunds/rr-2')).json().decision).toMatchObject({ action: 'approve', by: 'Ana Lopez', reason: null });
  });

  it('the approver who loses a race is told who decided, what and when', async () => {
    const { effectId, escalation, ana } = await queued('rr-race');
    const bea = await world.login('bea');
    expect((await world.as(ana, 'POST', `/api/items/${effectId}/decisions`, { action: 'approve', escalation })).json().status).toBe('COMMITTED');
    const late = (await world.as(bea, 'POST', `/api/items/${effectId}/decisions`, { action: 'reject', escalation, reason: 'too late' })).json();
    expect(late).toMatchObject({ status: 'ALREADY_DECIDED', decided: { action: 'approve', by: 'ana', display_name: 'Ana Lopez', reason: null } });
    expect(typeof late.decided.at_ms).toBe('number');
  });
});

describe('the directory', () => {
  it('names people by display name and lists the quick reasons, behind a session, with no secret', async () => {
    expect((await world.app.inject({ method: 'GET', url: '/api/directory' })).statusCode).toBe(401);
    const fin = await world.login('fin');
    const directory = (await world.as(fin, 'GET', '/api/directory')).json();
    expect(directory.people).toContainEqual({ name: 'ana', display_name: 'Ana Lopez', role: 'approver' });
    expect(directory.reject_reasons).toEqual(world.services.config.rejectReasons);
    expect(JSON.stringify(directory)).not.toMatch(/scrypt|password|token/);
  });
});
