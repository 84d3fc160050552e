import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { Escalated } from '../../shared/entries.ts';
import type { Json } from '../../shared/json.ts';
import { approvalsRequiredFor, approvalStanding, beneficiaryMatch, decideApproval } from '../../server/inbox/approvals.ts';
import { chainState } from '../../server/inbox/state.ts';
import { dispatchBlocker } from '../../server/journal/chain.ts';
import { Authority } from '../../server/gate/leases.ts';
import { buildChain, EFFECT_ID } from '../support/entries.ts';

// Four-eyes and no self-approval as pure decisions: tables whose last column is the outcome.

const request = { id: 'r-1', agent: 'bot', payment_intent: 'pi_1', amount: 150_000, flags: [], on_behalf_of: 'Jo@Example.com' };
const effect = { payment_intent: 'pi_1', amount: 150_000 };
const facts = { currency: 'usd', refunded: 0 };
const bind = ['PROPOSED', { agent: 'inbox', lease: null, premises: facts, effect, request }] as const;
const escalated = (over: Record<string, unknown> = {}) =>
  [
    'ESCALATED',
    {
      at_ms: 1_000,
      reason: 'needs_judgment',
      why: 'over $50.00',
      detail: [],
      facts,
      changes: [],
      repairs: [],
      route: 'large',
      group: 'controller',
      routed_to: ['ana', 'bea', 'cy'],
      level: 0,
      due_ms: null,
      breach: false,
      approvals_required: 2,
      ...over,
    },
  ] as const;
/** A decision naming the latest escalation so far. */
const decided = (by: string, decision = 'approve', atMs = 2_000) =>
  [
    'DECIDED',
    (sealed: readonly { hash: string; kind: string }[]) => ({
      at_ms: atMs,
      by,
      decision,
      escalation: sealed.findLast((e) => e.kind === 'ESCALATED')!.hash,
      group: 'controller',
      members: ['ana', 'bea', 'cy'],
      repair: null,
    }),
  ] as const;
const chainOf = (...steps: readonly unknown[]) => buildChain(EFFECT_ID, steps as never);
const latest = (chain: ReturnType<typeof chainOf>) => chain.findLast((e) => e.kind === 'ESCALATED') as Escalated;

describe('approvalsRequiredFor: two from the route amount upwards, in the payment currency', () => {
  it.each([
    ['no four-eyes on the route', null, 1_000_000, 'usd', 1],
    ['under the amount', { usd: 100_000 }, 99_999, 'usd', 1],
    ['at the amount', { usd: 100_000 }, 100_000, 'usd', 2],
    ['over the amount', { usd: 100_000 }, 150_000, 'usd', 2],
    ['its own amount in yen', { usd: 100_000, jpy: 150_000 }, 120_000, 'jpy', 1],
    ['a currency written in capitals by the facts', { usd: 100_000 }, 100_000, 'USD', 2],
    ['a currency the route does not name counts as over', { usd: 100_000 }, 1, 'krw', 2],
    ['facts naming no currency count as over', { usd: 100_000 }, 1, null, 2],
  ] as const)('%s → %i', (_name, twoFrom, amount, currency, expected) => {
    expect(approvalsRequiredFor(twoFrom, amount, currency)).toBe(expected);
  });
});

describe('beneficiaryMatch: the person the refund benefits never approves it', () => {
  const ana = { name: 'ana', emails: ['ana@example.com'] };
  it.each([
    ['nobody named, no customer email', null, null, null],
    ['on_behalf_of names the approver', 'ana', null, 'on_behalf_of'],
    ['on_behalf_of is an email of theirs, case aside', ' ANA@example.com ', null, 'on_behalf_of'],
    ["the payment's customer email is theirs", null, 'Ana@Example.com', 'customer_email'],
    ['someone else named and paid', 'jo@example.com', 'jo@example.com', null],
    ['a customer email equal to the approver name is no email match', null, 'ana', null],
  ] as const)('%s → %s', (_name, onBehalfOf, customerEmail, expected) => {
    expect(beneficiaryMatch(ana, { onBehalfOf, customerEmail })).toBe(expected);
  });

  it("the customer email is compared without regard to case either way, and the approvers' page says so where self-approval is described", () => {
    expect(beneficiaryMatch({ name: 'ana', emails: ['Ana.Lopez@Example.COM'] }, { onBehalfOf: null, customerEmail: 'ana.lopez@example.com' })).toBe('customer_email');
    const page = readFileSync(new URL('../../docs/approvers/two-approvers.md', import.meta.url), 'utf8');
    const start = page.indexOf('An agent may name the person a refund benefits');
    expect(start).toBeGreaterThanOrEqual(0);
    const paragraph = page.slice(start, page.indexOf('![A two-approver item'));
    expect(paragraph).toMatch(/customer email/);
    expect(paragraph).toMatch(/ignor\w* (letter )?case/i);
  });
});

describe('decideApproval: first match wins', () => {
  const none = { onBehalfOf: null, customerEmail: null };
  const cases = [
    ['a single-approver escalation: the first approval completes it', [bind, escalated({ approvals_required: undefined })], 'ana', none, { next: 'record', completes: true, count: 1, required: 1 }],
    ['four-eyes, first approval: recorded, 1 of 2', [bind, escalated()], 'ana', none, { next: 'record', completes: false, count: 1, required: 2 }],
    ['four-eyes, a second person: completes it', [bind, escalated(), decided('ana')], 'bea', none, { next: 'record', completes: true, count: 2, required: 2 }],
    ['four-eyes, the same person again: refused', [bind, escalated(), decided('ana')], 'ana', none, { next: 'refuse', code: 'same_approver' }],
    ['an approval of an older escalation does not count', [bind, escalated(), decided('ana'), escalated({ level: 1 })], 'ana', none, { next: 'record', completes: false, count: 1, required: 2 }],
    ['the beneficiary, before anything else', [bind, escalated(), decided('ana')], 'ana', { onBehalfOf: 'ana', customerEmail: null }, { next: 'refuse', code: 'beneficiary', match: 'on_behalf_of' }],
    ["the payment's customer", [bind, escalated()], 'bea', { onBehalfOf: null, customerEmail: 'bea@example.com' }, { next: 'refuse', code: 'beneficiary', match: 'customer_email' }],
  ] as const;
  it.each(cases)('%s → %j', (_name, steps, by, beneficiary, expected) => {
    const chain = chainOf(...steps);
    const emails = by === 'bea' ? ['bea@example.com'] : [`${by}@example.com`];
    expect(decideApproval(chain, latest(chain), { name: by, emails }, beneficiary)).toEqual(expected);
  });
});

describe('chainState and the dispatch rule count distinct approvals of the latest escalation', () => {
  const hashOf = (chain: ReturnType<typeof chainOf>) => latest(chain).hash;
  const lease = (chain: ReturnType<typeof chainOf>, co?: Json) => ({
    by: 'bea',
    at_ms: 3_000,
    group: 'controller',
    escalation: hashOf(chain),
    ...(co === undefined ? {} : { co_approvals: co }),
  });
  const one = chainOf(bind, escalated(), decided('ana'));
  const two = chainOf(bind, escalated(), decided('ana'), decided('bea', 'approve', 3_000));
  const twice = chainOf(bind, escalated(), decided('ana'), decided('ana', 'approve', 3_000));
  const moved = chainOf(bind, escalated(), decided('ana'), escalated({ level: 1 }), decided('bea', 'approve', 3_000));
  it.each([
    ['one approval of two', one, 'ESCALATED'],
    ['two distinct approvals', two, 'APPROVED'],
    ['the same person twice', twice, 'ESCALATED'],
    ['a new escalation starts the count again', moved, 'ESCALATED'],
    ['a reject after the first approval', chainOf(bind, escalated(), decided('ana'), decided('bea', 'reject')), 'CLOSED'],
  ] as const)('%s → %s', (_name, chain, expected) => {
    expect(chainState(chain)).toBe(expected);
  });
  it.each([
    ['both approvals in the lease', two, lease(two, [{ by: 'ana', at_ms: 2_000 }]), null],
    ['the second approval alone', two, lease(two), 'awaiting_decision'],
    ['a co-approval never recorded', two, lease(two, [{ by: 'cy', at_ms: 2_000 }]), 'awaiting_decision'],
    ['the same person twice in the lease', two, lease(two, [{ by: 'bea', at_ms: 3_000 }]), 'awaiting_decision'],
    ['one approval of two', one, { ...lease(one), by: 'ana', at_ms: 2_000 }, 'awaiting_decision'],
  ] as const)('dispatch under %s → %s', (_name, chain, given, expected) => {
    expect(dispatchBlocker(chain, effect, given, facts)).toBe(expected);
  });
});

describe('Authority: a four-eyes lease is live only while both approvals are', () => {
  const members = { controller: ['ana', 'bea'] } as Record<string, string[]>;
  const lease = { by: 'bea', at_ms: 5_000, group: 'controller', escalation: 'e', co_approvals: [{ by: 'ana', at_ms: 1_000 }] };
  it.each([
    ['both live', 6_000, ['ana', 'bea'], null],
    ['the first expired', 1_000 + 10_001, ['ana', 'bea'], 'approval_expired'],
    ['the first left the group', 6_000, ['bea'], 'approver_removed'],
    ['the second left the group', 6_000, ['ana'], 'approver_removed'],
  ] as const)('%s → %s', (_name, nowMs, group, expected) => {
    members.controller = [...group];
    const authority = new Authority({ members: (g) => members[g] ?? [], maxAgeMs: 10_000, nowMs: () => nowMs });
    expect(authority.problem(lease)).toBe(expected);
  });
  it('a malformed co-approval is no approval', () => {
    const authority = new Authority({ members: () => ['ana', 'bea'], maxAgeMs: null, nowMs: () => 0 });
    expect(authority.problem({ ...lease, co_approvals: [{ by: 'policy', at_ms: 1 }] })).toBe('not_an_approval');
  });
});

describe('approvalStanding: what the item shows', () => {
  const live = { nowMs: 4_000, maxAgeMs: 10_000, members: () => ['ana', 'bea', 'cy'] };
  const shown = (by: string, atMs: number, voided: string | null) => ({ by, at_ms: atMs, voided });
  it.each([
    ['one approver needed: nothing to show', [bind, escalated({ approvals_required: undefined })], live, null],
    ['1 of 2', [bind, escalated(), decided('ana')], live, { required: 2, approvals: [shown('ana', 2_000, null)], voided: [] }],
    ['the first expired since', [bind, escalated(), decided('ana')], { ...live, nowMs: 12_001 }, { required: 2, approvals: [shown('ana', 2_000, 'approval_expired')], voided: [] }],
    ['moved up the chain', [bind, escalated(), decided('ana'), escalated({ level: 1, at_ms: 3_000 })], live, { required: 2, approvals: [], voided: [shown('ana', 2_000, 'moved_up')] }],
    [
      'shown again on new facts',
      [bind, escalated(), decided('ana'), escalated({ at_ms: 3_000, changes: [{ field: 'refunded', was: 0, now: 10 }] })],
      live,
      { required: 2, approvals: [], voided: [shown('ana', 2_000, 'facts_changed')] },
    ],
    ['shown again once the first expired', [bind, escalated(), decided('ana'), escalated({ at_ms: 12_500 })], live, { required: 2, approvals: [], voided: [shown('ana', 2_000, 'approval_expired')] }],
  ] as const)('%s', (_name, steps, liveness, expected) => {
    expect(approvalStanding(chainOf(...steps), liveness)).toEqual(expected);
  });
});
