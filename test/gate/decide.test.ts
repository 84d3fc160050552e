import { describe, expect, it } from 'vitest';
import type { Json } from '../../shared/json.ts';
import { blockedDispatch, decideAfterLookup, decideRecovery, decideSubmit, type Offer, recoveryTier } from '../../server/gate/decide.ts';
import { DISPATCH_BLOCKERS } from '../../server/journal/chain.ts';
import { limits } from '../../shared/limits.ts';
import { buildChain, EFFECT_ID, LEASE, PREMISES, REFUND } from '../support/entries.ts';

// The gate's pure decisions, as tables whose last column is what the gate does (core §4.4, §4.7).

const identity = (lease: Json) => lease;
const offer = (over: Partial<Offer> = {}): Offer => ({ effect: REFUND, lease: LEASE, premises: PREMISES, recordConflict: true, ...over });
const proposed = ['PROPOSED', { agent: 'refund-bot', lease: LEASE, premises: PREMISES, effect: REFUND }] as const;
const dispatched = ['DISPATCHED', { effect: REFUND, lease: LEASE, premises: PREMISES, checks: { lease_live: true, lease: null, violations: [] } }] as const;
const other = { ...REFUND, amount: 30 };

describe('decideSubmit (core §4.4 steps 2-6, in order)', () => {
  it.each([
    ['an empty chain', [], offer(), { next: 'propose', decidedOn: PREMISES }],
    ['an open dispatch, even with another payload', [proposed, dispatched], offer({ effect: other }), { next: 'answer', status: 'IN_FLIGHT' }],
    ['another payload bound', [proposed], offer({ effect: other }), { next: 'record_conflict', recorded: REFUND }],
    ['another payload bound, answered only', [proposed], offer({ effect: other, recordConflict: false }), { next: 'answer', status: 'REFUSED:conflicting_payload' }],
    ['another payload after a commit (a conflict outranks committed)', [proposed, dispatched, ['COMMITTED', { result: 'ok' }]], offer({ effect: other }), { next: 'record_conflict', recorded: REFUND }],
    ['an ambiguity', [proposed, dispatched, ['AMBIGUOUS', { code: 'ambiguous' }]], offer(), { next: 'answer', status: 'AMBIGUOUS' }],
    ['a commit', [proposed, dispatched, ['COMMITTED', { result: 'ok' }]], offer(), { next: 'answer', status: 'DUPLICATE_IGNORED' }],
    ['a retry under the same authority: judged on the first facts', [proposed], offer({ premises: { refunded: 99 } }), { next: 'propose', decidedOn: PREMISES }],
    ['a new authority brings its own facts', [proposed], offer({ lease: 'L-other', premises: { refunded: 99 } }), { next: 'propose', decidedOn: { refunded: 99 } }],
  ] as const)('%s → %j', (_name, steps, given, expected) => {
    expect(decideSubmit(buildChain(EFFECT_ID, steps as never), given, identity)).toEqual(expected);
  });
});

describe('blockedDispatch (core §4.4 step 13)', () => {
  it.each([
    ['committed', 'DUPLICATE_IGNORED', false],
    ['ambiguous', 'AMBIGUOUS', false],
    ['in_flight', 'IN_FLIGHT', false],
    ['conflicting_payload', 'REFUSED:conflicting_payload', true],
    ['closed', 'REFUSED:closed', true],
    ['awaiting_decision', 'REFUSED:awaiting_decision', true],
    ['target_error', 'REFUSED:target_error', true],
  ] as const)('%s → %s, a REFUSED written: %s', (blocker, status, refuse) => {
    expect(blockedDispatch(blocker)).toEqual({ status, refuse });
  });

  it('covers every blocker the dispatch rule can give', () => {
    for (const blocker of DISPATCH_BLOCKERS) expect(blockedDispatch(blocker).status).toMatch(/^(DUPLICATE_IGNORED|AMBIGUOUS|IN_FLIGHT|REFUSED:)/);
  });
});

describe('recovery (core §4.7)', () => {
  const windowMs = limits.stripeKeyWindowMs;
  const edgeMs = windowMs - limits.dedupMarginMs;
  it.each([
    ['tier 1 inside the key window', { tier: 1, queryable: true, dedupWindowMs: windowMs }, edgeMs, 1],
    ['tier 1 past the window, with a lookup', { tier: 1, queryable: true, dedupWindowMs: windowMs }, edgeMs + 1, 2],
    ['tier 1 past the window, no lookup', { tier: 1, queryable: false, dedupWindowMs: windowMs }, edgeMs + 1, 3],
    ['tier 1 that never forgets a key', { tier: 1, queryable: false, dedupWindowMs: null }, 10 * windowMs, 1],
    ['tier 2', { tier: 2, queryable: true, dedupWindowMs: windowMs }, edgeMs + 1, 2],
    ['tier 3', { tier: 3, queryable: false, dedupWindowMs: null }, 0, 3],
  ] as const)('recoveryTier: %s → tier %s', (_name, target, elapsedMs, tier) => {
    expect(recoveryTier(target, 1_000, 1_000 + elapsedMs)).toBe(tier);
  });

  it.each([
    [3, null, true, 'ambiguous'],
    [1, null, true, 'resend'],
    [1, null, false, 'resend'],
    [1, 'stale_premise', true, 'lookup'],
    [1, 'lease', false, 'ambiguous'],
    [2, null, true, 'lookup'],
    [2, null, false, 'ambiguous'],
  ] as const)('decideRecovery: tier %s, stale %s, queryable %s → %s', (tier, stale, queryable, next) => {
    expect(decideRecovery(tier, stale, queryable)).toBe(next);
  });

  it.each([
    [true, 'lease', 'commit_found'],
    [true, null, 'commit_found'],
    [false, 'stale_premise', 'refuse'],
    [false, 'lease', 'refuse'],
    [false, null, 'reapply'],
  ] as const)('decideAfterLookup: found %s, stale %s → %s', (found, stale, next) => {
    expect(decideAfterLookup(found, stale)).toBe(next);
  });
});
