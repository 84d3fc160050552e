import { describe, expect, it } from 'vitest';
import { decideInboxSubmit, decisionPrecondition } from '../../server/inbox/decide.ts';
import { buildChain, EFFECT_ID } from '../support/entries.ts';

// The inbox's pure decisions, as tables whose last column is what the inbox does (inbox §6, §8).

const request = { id: 'r-1', agent: 'bot', order: '881', amount: 80, flags: [] };
const bind = ['PROPOSED', { agent: 'inbox', lease: null, premises: { refunded: 0 }, effect: { order: '881', amount: 80 }, request }] as const;
const escalated = (over: Record<string, unknown> = {}) =>
  [
    'ESCALATED',
    {
      at_ms: 1,
      reason: 'needs_judgment',
      why: 'a rule wants a person to decide',
      detail: [],
      facts: { refunded: 0 },
      changes: [],
      repairs: [],
      route: 'default',
      group: 'ap-leads',
      routed_to: ['ana'],
      level: 0,
      due_ms: null,
      breach: false,
      ...over,
    },
  ] as const;
const decided = (decision: string) =>
  ['DECIDED', (sealed: readonly { hash: string; kind: string }[]) => ({ at_ms: 2, by: 'ana', decision, escalation: sealed.findLast((e) => e.kind === 'ESCALATED')!.hash, group: 'ap-leads', members: ['ana'], repair: null })] as const;
const dispatched = ['DISPATCHED', { effect: { order: '881', amount: 80 }, lease: null, premises: {}, checks: { lease_live: true, lease: null } }] as const;
const refusedStale = ['REFUSED', { code: 'stale_premise', reason: ['refunded: was 0, now 30'] }] as const;

describe('decideInboxSubmit (inbox §6, first match wins)', () => {
  it.each([
    ['an empty chain', [], request, { next: 'decide' }],
    ['a bound request, not yet escalated (a crash in between)', [bind], request, { next: 'decide' }],
    ['another request bound under the id', [bind], { ...request, amount: 30 }, { next: 'answer', status: 'REFUSED:conflicting_payload' }],
    ['an open escalation', [bind, escalated()], request, { next: 'answer', status: 'QUEUED' }],
    ['an approval not yet sent', [bind, escalated(), decided('approve')], request, { next: 'answer', status: 'APPROVED' }],
    ['a refusal after the approval', [bind, escalated(), decided('approve'), refusedStale], request, { next: 'escalate_owed' }],
    ['a rejection', [bind, escalated(), decided('reject')], request, { next: 'answer', status: 'CLOSED' }],
    ['a send in flight', [bind, escalated(), decided('approve'), dispatched], request, { next: 'answer', status: 'IN_FLIGHT' }],
    ['a commit', [bind, escalated(), decided('approve'), dispatched, ['COMMITTED', { result: 'ok' }]], request, { next: 'answer', status: 'DUPLICATE_IGNORED' }],
  ] as const)('%s → %j', (_name, steps, offered, expected) => {
    expect(decideInboxSubmit(buildChain(EFFECT_ID, steps as never), offered)).toEqual(expected);
  });
});

describe('decisionPrecondition (inbox §8, in order)', () => {
  const members = (group: string) => (group === 'ap-leads' ? ['ana', 'bea'] : ['ops']);
  const open = buildChain(EFFECT_ID, [bind, escalated()] as never);
  const hash = open.at(-1)!.hash;
  it.each([
    ['nothing to decide', [], 'ana', undefined, 'approve', 'ALREADY_DECIDED'],
    ['already decided', [bind, escalated(), decided('reject')], 'ana', undefined, 'approve', 'ALREADY_DECIDED'],
    ['another escalation than the one seen', [bind, escalated()], 'ana', 'f'.repeat(64), 'approve', 'SUPERSEDED'],
    ['an ambiguity cannot be approved', [bind, escalated({ reason: 'ambiguous' })], 'ana', undefined, 'approve', 'REFUSED:ambiguous'],
    ['an ambiguity can be closed', [bind, escalated({ reason: 'ambiguous' })], 'ana', undefined, 'reject', 'ok'],
    ['a person outside the group', [bind, escalated()], 'ops', undefined, 'approve', 'REFUSED:lease'],
    ['a member of the group', [bind, escalated()], 'bea', undefined, 'repair', 'ok'],
  ] as const)('%s → %s', (_name, steps, by, seen, action, expected) => {
    const answer = decisionPrecondition(buildChain(EFFECT_ID, steps as never), by, seen, action, members);
    expect(typeof answer === 'string' ? answer : 'ok').toBe(expected);
  });

  it('the escalation seen is the one answered', () => {
    expect(decisionPrecondition(open, 'ana', hash, 'approve', members)).toEqual({ escalation: open.at(-1) });
  });
});
