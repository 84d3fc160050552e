import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Scoreboard } from '../../shared/api.ts';
import type { LedgerRow } from '../../shared/ledger.ts';
import { type AppWorld, buildAppWorld } from '../support/app-world.ts';

// The scoreboard and the ledger are two readings of one journal: a figure finance reads on one must
// be the figure the rows of the other add up to. A day with routine refunds, approvals, approvals
// on the facts now (the same refund approved after a refund outside Interlock left room for it),
// real repairs (a smaller refund replacing the one asked) and rejections, compared figure by figure.

let world: AppWorld;
let board: Scoreboard;
let rows: LedgerRow[];
type Who = { cookie: string; csrf: string };

async function ask(requestId: string, amount: number, paid = 20_000, handRefund = 0): Promise<string> {
  const pi = await world.payment(paid);
  const effectId = (await world.agent('POST', '/v1/refunds', { request_id: requestId, payment_intent: pi, amount })).json().effect_id as string;
  // A refund made outside Interlock once the item waits for a person.
  if (handRefund > 0) world.sandbox.handRefund(pi, handRefund);
  return effectId;
}

async function shown(who: Who, effectId: string) {
  return (await world.as(who, 'GET', `/api/items/${effectId}`)).json().item as { escalation: string; repairs: { set: Record<string, unknown> }[] };
}

async function decide(who: Who, effectId: string, body: Record<string, unknown>): Promise<string> {
  const item = await shown(who, effectId);
  return (await world.as(who, 'POST', `/api/items/${effectId}/decisions`, { escalation: item.escalation, ...body })).json().status as string;
}

/** Approve what the item shows; where a refund outside Interlock changed the payment, the send is refused and it is shown again on the facts now. */
async function approveOnFactsNow(who: Who, effectId: string): Promise<string> {
  expect(await decide(who, effectId, { action: 'approve' })).toBe('REFUSED:stale_premise');
  const repairs = (await shown(who, effectId)).repairs;
  const fits = repairs.findIndex((r) => Object.keys(r.set).length === 0);
  expect(fits).toBeGreaterThanOrEqual(0);
  return decide(who, effectId, { action: 'repair', repair_index: fits });
}

async function repairRemaining(who: Who, effectId: string): Promise<string> {
  expect(await decide(who, effectId, { action: 'approve' })).toBe('REFUSED:stale_premise');
  const repairs = (await shown(who, effectId)).repairs;
  const smaller = repairs.findIndex((r) => typeof r.set.amount === 'number');
  expect(smaller).toBeGreaterThanOrEqual(0);
  return decide(who, effectId, { action: 'repair', repair_index: smaller });
}

beforeAll(async () => {
  world = await buildAppWorld();
  const ana = await world.login('ana');
  // Routine: cleared by the policy with no person.
  expect((await world.agent('POST', '/v1/refunds', { request_id: 'day-routine-1', payment_intent: await world.payment(5_000), amount: 1_500 })).json().status).toBe('COMMITTED');
  expect((await world.agent('POST', '/v1/refunds', { request_id: 'day-routine-2', payment_intent: await world.payment(5_000), amount: 2_500 })).json().status).toBe('COMMITTED');
  // Approvals.
  expect(await decide(ana, await ask('day-approved-1', 8_000), { action: 'approve' })).toBe('COMMITTED');
  expect(await decide(ana, await ask('day-approved-2', 9_000), { action: 'approve' })).toBe('COMMITTED');
  // Approvals on the facts now: $60.00 of $200.00 after $50.00 refunded outside Interlock, and $95.00 after $30.00.
  expect(await approveOnFactsNow(ana, await ask('day-facts-now-1', 6_000, 20_000, 5_000))).toBe('COMMITTED');
  expect(await approveOnFactsNow(ana, await ask('day-facts-now-2', 9_500, 20_000, 3_000))).toBe('COMMITTED');
  // Real repairs: what is left is refunded instead of what was asked.
  expect(await repairRemaining(ana, await ask('day-repair-1', 8_000, 10_000, 4_000))).toBe('COMMITTED');
  expect(await repairRemaining(ana, await ask('day-repair-2', 9_000, 10_000, 2_500))).toBe('COMMITTED');
  // Rejections.
  expect(await decide(ana, await ask('day-rejected-1', 7_500), { action: 'reject', reason: 'Outside the refund window' })).toBe('REJECTED');
  expect(await decide(ana, await ask('day-rejected-2', 6_500), { action: 'reject', reason: 'Already refunded another way' })).toBe('REJECTED');
  const fin = await world.login('fin');
  board = (await world.as(fin, 'GET', '/api/scoreboard')).json().board as Scoreboard;
  rows = (await world.as(fin, 'GET', '/api/ledger?limit=200')).json().rows as LedgerRow[];
}, 60_000);
afterAll(async () => world.close());

const sum = (list: LedgerRow[], pick: (row: LedgerRow) => number | null) => list.reduce((total, row) => total + (pick(row) ?? 0), 0);

describe('the scoreboard agrees with the ledger, figure by figure', () => {
  it('requests: one a row, the new requests of repairs apart', () => {
    expect(rows).toHaveLength(12);
    expect(board.requests).toBe(rows.filter((r) => r.repair_of === null).length);
  });

  it('repairs: as many as the ledger has requests a repair replaced, and as many new requests', () => {
    const replaced = rows.filter((r) => r.outcome === 'repaired');
    expect([replaced.length, rows.filter((r) => r.repair_of !== null).length]).toEqual([2, 2]);
    expect(board.closed_by_repair).toBe(replaced.length);
    expect(board.repairs_accepted).toBe(replaced.length);
  });

  it('approvals on the facts now are counted as such, not as repairs', () => {
    expect(board.approved_on_facts_now).toBe(2);
  });

  it('money sent on repairs is what the new requests of repairs refunded', () => {
    const usd = board.money.usd!;
    expect(usd.repaired_minor).toBe(sum(rows.filter((r) => r.repair_of !== null), (r) => r.amount_sent_minor));
    expect(usd.repaired_minor).toBe(6_000 + 7_500);
  });

  it('refunded, with no person and after a person, is what the rows sent', () => {
    const usd = board.money.usd!;
    expect(usd.refunded_minor).toBe(sum(rows, (r) => r.amount_sent_minor));
    expect(usd.refunded_no_person_minor).toBe(sum(rows.filter((r) => r.decided_by_kind === 'policy'), (r) => r.amount_sent_minor));
    expect(usd.refunded_after_person_minor).toBe(sum(rows.filter((r) => r.decided_by_kind === 'person'), (r) => r.amount_sent_minor));
    expect(board.cleared_no_person).toBe(rows.filter((r) => r.decided_by_kind === 'policy' && r.outcome === 'refunded').length);
  });

  it('rejections: the count and what they asked', () => {
    const rejected = rows.filter((r) => r.outcome === 'rejected');
    expect(board.rejected).toBe(rejected.length);
    expect(board.money.usd!.rejected_minor).toBe(sum(rejected, (r) => r.amount_asked_minor));
  });
});
