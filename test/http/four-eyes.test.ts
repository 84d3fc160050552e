import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Entry } from '../../shared/entries.ts';
import { verifyReceipt } from '../../server/receipts/verify.ts';
import { computeScoreboard } from '../../server/scoreboard/figures.ts';
import { type AppWorld, buildAppWorld, testConfig } from '../support/app-world.ts';

// Four-eyes and no self-approval through the approvers' API: from $100.00 on the default route two
// distinct people approve; the refund's beneficiary (on_behalf_of, or the payment's customer
// email) never approves; a lapsed or out-of-date first approval is voided and says why.

const MINUTE_MS = 60_000;
let world: AppWorld;
beforeAll(async () => {
  const config = testConfig();
  world = await buildAppWorld({
    config: {
      ...config,
      groups: { ...config.groups, 'finance-manager': ['fm', 'cy'] },
      people: config.people.map((p) => (p.name === 'ana' ? { ...p, email: 'ana@example.com' } : p)),
      routes: config.routes.map((r) => (r.name === 'default' ? { ...r, twoApproversFrom: { usd: 10_000 } } : r)),
    },
  });
});
afterAll(async () => world.close());

type Who = { cookie: string; csrf: string };

async function queued(requestId: string, amount: number, extra: Record<string, unknown> = {}, customerEmail?: string) {
  const pi = customerEmail
    ? (await world.sandbox.createPaymentIntent(20_000, 'pm_card_visa', { customer: { name: 'Ana', email: customerEmail } })).id
    : await world.payment(20_000);
  const posted = await world.agent('POST', '/v1/refunds', { request_id: requestId, payment_intent: pi, amount, ...extra });
  expect(posted.json().status).toBe('QUEUED');
  return posted.json().effect_id as string;
}

async function page(who: Who, effectId: string) {
  return (await world.as(who, 'GET', `/api/items/${effectId}`)).json();
}

async function approve(who: Who, effectId: string) {
  const escalation = (await page(who, effectId)).item.escalation as string;
  return world.as(who, 'POST', `/api/items/${effectId}/decisions`, { action: 'approve', escalation });
}

const kinds = (chain: readonly Entry[]) => chain.map((e) => e.kind);

describe('four-eyes from the route amount', () => {
  it('under the amount one approval sends it, and the escalation pins nothing', async () => {
    const effectId = await queued('fe-small', 9_999);
    const ana = await world.login('ana');
    expect((await page(ana, effectId)).approvals).toBeNull();
    expect((await approve(ana, effectId)).json().status).toBe('COMMITTED');
    const escalated = (await world.services.journal.entries(effectId)).find((e) => e.kind === 'ESCALATED');
    expect(escalated).not.toHaveProperty('approvals_required');
  });

  it('the queue’s row tells 1 of 2, and whose, once the first approval lands; a row one approver decides tells nothing', async () => {
    const [four, one] = [await queued('fe-row', 15_000), await queued('fe-row-small', 9_999)];
    const [ana, bea] = [await world.login('ana'), await world.login('bea')];
    const row = async (effectId: string) => (await world.as(bea, 'GET', '/api/inbox')).json().items.find((i: { effect_id: string }) => i.effect_id === effectId);
    expect((await row(four)).approvals).toEqual({ required: 2, given: [] });
    expect(await row(one)).not.toHaveProperty('approvals');
    expect((await approve(ana, four)).json().status).toBe('PARTLY_APPROVED');
    expect((await row(four)).approvals).toEqual({ required: 2, given: [{ by: 'ana', at_ms: expect.any(Number) }] });
    expect((await approve(bea, four)).json().status).toBe('COMMITTED');
    expect(await row(four)).toBeUndefined();
    expect((await approve(ana, one)).json().status).toBe('COMMITTED');
  });

  it('the first approval is journaled, 1 of 2; the same person again is refused; a second person sends it under both', async () => {
    const effectId = await queued('fe-two', 15_000);
    const [ana, bea] = [await world.login('ana'), await world.login('bea')];
    expect((await page(ana, effectId)).approvals).toEqual({ required: 2, approvals: [], voided: [] });
    const first = await approve(ana, effectId);
    expect([first.statusCode, first.json().status]).toEqual([200, 'PARTLY_APPROVED']);
    const seen = await page(bea, effectId);
    expect(seen.approvals.approvals).toEqual([expect.objectContaining({ by: 'ana', display_name: 'Ana Lopez', voided: null })]);
    expect(seen.state).toBe('ESCALATED');
    expect((await page(ana, effectId)).approval_block).toMatchObject({ code: 'same_approver' });
    const before = await world.entryCount();
    const again = await approve(ana, effectId);
    expect([again.statusCode, again.json().error.code]).toEqual([409, 'same_approver']);
    expect(await world.entryCount()).toBe(before);
    expect((await approve(bea, effectId)).json().status).toBe('COMMITTED');
    const chain = await world.services.journal.entries(effectId);
    expect(kinds(chain).filter((k) => k === 'DECIDED')).toHaveLength(2);
    const dispatched = chain.find((e) => e.kind === 'DISPATCHED');
    expect(dispatched?.kind === 'DISPATCHED' && dispatched.lease).toMatchObject({ by: 'bea', co_approvals: [{ by: 'ana' }] });
    const decided = kinds(chain).flatMap((k, i) => (k === 'DECIDED' ? [chain[i]!.hash] : []));
    expect((await page(ana, effectId)).history_approvals).toEqual([
      { hash: decided[0], by: 'ana', display_name: 'Ana Lopez', at_ms: expect.any(Number), nth: 1, required: 2, completes: false, voided: null },
      { hash: decided[1], by: 'bea', display_name: 'Bea Novak', at_ms: expect.any(Number), nth: 2, required: 2, completes: true, voided: null },
    ]);
    const receipt = (await world.as(ana, 'GET', `/api/items/${effectId}/receipt`)).json();
    const keys = new Map([[world.services.signingKey.keyId, world.services.signingKey.publicKeyPem]]);
    expect(await verifyReceipt(receipt, keys)).toMatchObject({ valid: true, approved_by: 'bea', approvers: ['ana', 'bea'] });
    // The ledger names both, the earlier first, as the receipt does; and so does its CSV.
    const row = (await world.as(ana, 'GET', '/api/ledger?limit=200')).json().rows.find((r: { effect_id: string }) => r.effect_id === effectId);
    expect(row).toMatchObject({ decided_by_login: 'bea', approved_by_logins: ['ana', 'bea'] });
    const csv = (await world.as(ana, 'GET', '/api/ledger.csv')).body;
    expect(csv.split('\r\n').find((line: string) => line.includes('"fe-two"'))).toMatch(/,"ana; bea",$/);
  });

  it('an approval that expired before the second is voided: the item is shown again and says why', async () => {
    const effectId = await queued('fe-expired', 15_000);
    const [ana, bea] = [await world.login('ana'), await world.login('bea')];
    expect((await approve(ana, effectId)).json().status).toBe('PARTLY_APPROVED');
    world.clock.advance(241 * MINUTE_MS);
    // The agent reads what the page shows: an expired approval is not one of the two.
    const lapsedRead = (await world.agent('GET', '/v1/refunds/fe-expired')).json();
    expect([lapsedRead.approvals, lapsedRead.why.includes('1 of 2')]).toEqual([{ required: 2, given: [] }, false]);
    const [ana2, bea2] = [await world.login('ana'), await world.login('bea')];
    void ana;
    void bea;
    const reshown = (await approve(bea2, effectId)).json();
    // Nobody decided before Bea: Ana's approval lapsed, it is not a decision that came first.
    expect([reshown.status, reshown.decided]).toEqual(['SUPERSEDED', null]);
    expect((await page(bea2, effectId)).approvals).toEqual({
      required: 2,
      approvals: [],
      voided: [expect.objectContaining({ by: 'ana', voided: 'approval_expired' })],
    });
    expect((await approve(bea2, effectId)).json().status).toBe('PARTLY_APPROVED');
    expect((await approve(ana2, effectId)).json().status).toBe('COMMITTED');
    expect((await page(ana2, effectId)).history_approvals.map((a: Record<string, unknown>) => [a.by, a.nth, a.completes, a.voided])).toEqual([
      ['ana', 1, false, 'approval_expired'],
      ['bea', 1, false, null],
      ['ana', 2, true, null],
    ]);
  });

  it('a move up the chain starts the count again, and the voided approval says so', async () => {
    const effectId = await queued('fe-moved', 15_000);
    const ana = await world.login('ana');
    expect((await approve(ana, effectId)).json().status).toBe('PARTLY_APPROVED');
    world.clock.advance(241 * MINUTE_MS);
    expect(await world.services.inbox.tick()).toEqual(new Map([[effectId, 'finance-manager']]));
    const fm = await world.login('fm');
    expect((await page(fm, effectId)).approvals).toEqual({ required: 2, approvals: [], voided: [expect.objectContaining({ by: 'ana', voided: 'moved_up' })] });
    const escalations = (await world.services.journal.entries(effectId)).filter((e) => e.kind === 'ESCALATED');
    expect(escalations.at(-1)).toMatchObject({ level: 1, approvals_required: 2 });
    expect((await page(fm, effectId)).history_approvals).toEqual([expect.objectContaining({ by: 'ana', nth: 1, completes: false, voided: 'moved_up' })]);
  });

  it('a first approval then closed by another person is voided in the history, saying it was rejected', async () => {
    const effectId = await queued('fe-rejected', 15_000);
    const [ana, bea] = [await world.login('ana'), await world.login('bea')];
    expect((await approve(ana, effectId)).json().status).toBe('PARTLY_APPROVED');
    const escalation = (await page(bea, effectId)).item.escalation as string;
    const rejected = await world.as(bea, 'POST', `/api/items/${effectId}/decisions`, { action: 'reject', escalation, reason: 'Not ours to refund.' });
    expect(rejected.json().status).toBe('REJECTED');
    expect((await page(bea, effectId)).history_approvals).toEqual([expect.objectContaining({ by: 'ana', nth: 1, voided: 'rejected' })]);
  });

  it('the queue’s row does not count an approval that expired: it tells what the agent and the item page tell', async () => {
    const effectId = await queued('fe-row-expired', 15_000);
    const ana = await world.login('ana');
    expect((await approve(ana, effectId)).json().status).toBe('PARTLY_APPROVED');
    world.clock.advance(241 * MINUTE_MS);
    const bea = await world.login('bea');
    const row = (await world.as(bea, 'GET', '/api/inbox')).json().items.find((i: { effect_id: string }) => i.effect_id === effectId);
    expect((await world.agent('GET', '/v1/refunds/fe-row-expired')).json().approvals).toEqual({ required: 2, given: [] });
    expect(row.approvals).toEqual({ required: 2, given: [] });
  });
});

describe('one person, two ways of approving', () => {
  it('an approval given as the repair that still fits counts once: the same person again, plainly or as the repair, is 409 same_approver', async () => {
    const pi = await world.payment(20_000);
    const posted = await world.agent('POST', '/v1/refunds', { request_id: 'fe-via-repair', payment_intent: pi, amount: 15_000 });
    const effectId = posted.json().effect_id as string;
    const [ana, bea] = [await world.login('ana'), await world.login('bea')];
    // A refund by hand; two approvals of what was shown reach the send, which is refused as stale and shown again.
    world.sandbox.handRefund(pi, 1_000);
    expect((await approve(ana, effectId)).json().status).toBe('PARTLY_APPROVED');
    expect((await approve(bea, effectId)).json().status).toBe('REFUSED:stale_premise');
    const shown = (await page(ana, effectId)).item;
    const fits = shown.repairs.findIndex((r: { set: object }) => Object.keys(r.set).length === 0);
    expect(fits).toBeGreaterThanOrEqual(0);
    const viaRepair = () => world.as(ana, 'POST', `/api/items/${effectId}/decisions`, { action: 'repair', escalation: shown.escalation, repair_index: fits });
    expect((await viaRepair()).json().status).toBe('PARTLY_APPROVED');
    const before = await world.entryCount();
    for (const again of [await approve(ana, effectId), await viaRepair()]) expect([again.statusCode, again.json().error.code]).toEqual([409, 'same_approver']);
    expect(await world.entryCount()).toBe(before);
    expect((await approve(bea, effectId)).json().status).toBe('COMMITTED');
  });
});

describe('approvals that race', () => {
  it('one person in two tabs at once: one approval is recorded, the other is 409 same_approver', async () => {
    const effectId = await queued('fe-tabs', 15_000);
    const [tab1, tab2] = [await world.login('ana'), await world.login('ana')];
    const answers = await Promise.all([approve(tab1, effectId), approve(tab2, effectId)]);
    expect(answers.map((a) => a.json().status ?? a.json().error.code).sort()).toEqual(['PARTLY_APPROVED', 'same_approver']);
    const chain = await world.services.journal.entries(effectId);
    expect(kinds(chain).filter((k) => k === 'DECIDED')).toHaveLength(1);
  });

  it('two people approving at once: the one whose approval lands second completes it and sends it, and is told so', async () => {
    // Each read the chain with no approval on it; without looking again after its write, both
    // were told 1 of 2 (five runs in six) and the approved refund waited for a background pass.
    const effectId = await queued('fe-together', 15_000);
    const [ana, bea] = [await world.login('ana'), await world.login('bea')];
    const answers = await Promise.all([approve(ana, effectId), approve(bea, effectId)]);
    expect(answers.map((a) => a.json().status).sort()).toEqual(['COMMITTED', 'PARTLY_APPROVED']);
    const chain = await world.services.journal.entries(effectId);
    expect(kinds(chain).filter((k) => k === 'COMMITTED')).toHaveLength(1);
  });
});

describe('nobody approves a refund for their own benefit', () => {
  it('on_behalf_of names the approver: the page says why, the approval is 403 self_approval, nothing written', async () => {
    const effectId = await queued('fe-self', 2_000 + 6_000, { on_behalf_of: 'BEA' });
    const bea = await world.login('bea');
    const shown = await page(bea, effectId);
    expect(shown.request.on_behalf_of).toBe('BEA');
    expect(shown.approval_block).toEqual({ code: 'beneficiary', why: 'It is made for your benefit: the request names you (on behalf of BEA). Someone else must approve it.' });
    const before = await world.entryCount();
    const answer = await approve(bea, effectId);
    expect([answer.statusCode, answer.json().error.code]).toEqual([403, 'self_approval']);
    expect(await world.entryCount()).toBe(before);
    expect((await approve(await world.login('ana'), effectId)).json().status).toBe('COMMITTED');
  });

  it('the beneficiary cannot accept a repair either: 403 self_approval, nothing written, and someone else may', async () => {
    const pi = await world.payment(10_000);
    const posted = await world.agent('POST', '/v1/refunds', { request_id: 'fe-self-repair', payment_intent: pi, amount: 8_000, on_behalf_of: 'bea' });
    const effectId = posted.json().effect_id as string;
    world.sandbox.handRefund(pi, 3_000);
    const ana = await world.login('ana');
    expect((await approve(ana, effectId)).json().status).toBe('REFUSED:stale_premise');
    const bea = await world.login('bea');
    const shown = (await page(bea, effectId)).item;
    expect(shown.repairs).toMatchObject([{ code: 'refund_remaining', set: { amount: 7_000 } }]);
    const before = await world.entryCount();
    const answer = await world.as(bea, 'POST', `/api/items/${effectId}/decisions`, { action: 'repair', escalation: shown.escalation, repair_index: 0 });
    expect([answer.statusCode, answer.json().error?.code]).toEqual([403, 'self_approval']);
    expect(await world.entryCount()).toBe(before);
    const repaired = await world.as(ana, 'POST', `/api/items/${effectId}/decisions`, { action: 'repair', escalation: shown.escalation, repair_index: 0 });
    expect(repaired.json().status).toBe('COMMITTED');
  });

  it("the payment's customer email is the approver's config email: refused with the reason", async () => {
    const effectId = await queued('fe-customer', 8_000, {}, 'Ana@Example.com');
    const ana = await world.login('ana');
    const answer = await approve(ana, effectId);
    expect([answer.statusCode, answer.json().error.code]).toEqual([403, 'self_approval']);
    expect(answer.json().error.message).toContain("the payment's customer email is yours");
    expect((await approve(await world.login('bea'), effectId)).json().status).toBe('COMMITTED');
  });

  it('on_behalf_of is part of the bound payload: the same request id without it is a conflict', async () => {
    const pi = await world.payment(20_000);
    const body = { request_id: 'fe-bound', payment_intent: pi, amount: 8_000 };
    expect((await world.agent('POST', '/v1/refunds', { ...body, on_behalf_of: 'jo@example.com' })).json().status).toBe('QUEUED');
    expect((await world.agent('POST', '/v1/refunds', body)).statusCode).toBe(409);
    const bad = await world.agent('POST', '/v1/refunds', { ...body, request_id: 'fe-bad', on_behalf_of: 'two words' });
    expect([bad.statusCode, bad.json().error.code]).toEqual([400, 'validation_failed']);
  });
});

describe('the record of a four-eyes refund made for someone', () => {
  it('the Done list names both approvers, the earlier first, and the currency; the ledger and its CSV name who it is made for', async () => {
    const effectId = await queued('fe-record', 15_000, { on_behalf_of: 'cy' });
    const [ana, bea] = [await world.login('ana'), await world.login('bea')];
    expect((await approve(bea, effectId)).json().status).toBe('PARTLY_APPROVED');
    expect((await approve(ana, effectId)).json().status).toBe('COMMITTED');
    const done = (await world.as(ana, 'GET', '/api/done?q=fe-record')).json().items;
    expect(done).toEqual([expect.objectContaining({ decided_by: 'ana', approved_by: ['bea', 'ana'], currency: 'usd' })]);
    expect(done[0].request.on_behalf_of).toBe('cy');
    const row = (await world.as(ana, 'GET', '/api/ledger?limit=200')).json().rows.find((r: { effect_id: string }) => r.effect_id === effectId);
    expect(row).toMatchObject({ approved_by_logins: ['bea', 'ana'], beneficiary: 'cy' });
    const lines = (await world.as(ana, 'GET', '/api/ledger.csv')).body.split('\r\n');
    expect(lines[0]).toMatch(/,approved_by_logins,beneficiary$/);
    expect(lines.find((line: string) => line.includes('"fe-record"'))).toMatch(/,"bea; ana","cy"$/);
    expect(lines.find((line: string) => line.includes('"fe-small"'))).toMatch(/,"ana",$/);
  });

  it('the Closed list carries the currency of a rejected refund', async () => {
    const effectId = await queued('fe-closed', 7_500);
    const ana = await world.login('ana');
    const escalation = (await page(ana, effectId)).item.escalation as string;
    const rejected = await world.as(ana, 'POST', `/api/items/${effectId}/decisions`, { action: 'reject', escalation, reason: 'Outside the refund window' });
    expect(rejected.json().status).toBe('REJECTED');
    expect((await world.as(ana, 'GET', '/api/closed?q=fe-closed')).json().items).toEqual([expect.objectContaining({ currency: 'usd', approved_by: [] })]);
  });
});

describe('what an agent reads of a four-eyes item', () => {
  it('a first approval of two is no decision: the agent reads QUEUED, no decision, and the approvals so far (1 of 2)', async () => {
    const effectId = await queued('fe-agent', 15_000);
    const waiting = (await world.agent('GET', '/v1/refunds/fe-agent')).json();
    expect(waiting).toMatchObject({ status: 'QUEUED', decision: null, approvals: { required: 2, given: [] } });
    const ana = await world.login('ana');
    expect((await approve(ana, effectId)).json().status).toBe('PARTLY_APPROVED');
    const half = await world.agent('GET', '/v1/refunds/fe-agent');
    expect(half.statusCode).toBe(202);
    expect(half.json()).toMatchObject({
      status: 'QUEUED',
      decision: null,
      approvals: { required: 2, given: [{ by: 'Ana Lopez', at: expect.any(String) }] },
    });
    expect(half.json().why).toContain('1 of 2');
    // Finance's figures agree: still open, nobody has decided, no time to a decision yet.
    const board = computeScoreboard(await world.services.journal.entries(effectId), world.services.inbox.name);
    expect([board.open, board.time_to_decision.n, board.sent_after_person]).toEqual([1, 0, 0]);
    expect((await approve(await world.login('bea'), effectId)).json().status).toBe('COMMITTED');
    const sent = (await world.agent('GET', '/v1/refunds/fe-agent')).json();
    expect(sent).toMatchObject({ status: 'COMMITTED', decision: { action: 'approve', by: 'Bea Novak' }, approvals: { required: 2 } });
    expect(sent.approvals.given.map((a: { by: string }) => a.by)).toEqual(['Ana Lopez', 'Bea Novak']);
  });

  it('an item one approver decides tells no approvals', async () => {
    await queued('fe-agent-one', 8_000);
    expect((await world.agent('GET', '/v1/refunds/fe-agent-one')).json().approvals).toBeNull();
  });
});
