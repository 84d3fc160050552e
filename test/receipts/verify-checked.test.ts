import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Entry } from '../../shared/entries.ts';
import { verifyCheckedChain, verifyReceipt } from '../../server/receipts/verify.ts';
import {
  buildChain,
  committedSteps,
  confirmedFields,
  decidedFields,
  dispatchedSteps,
  EFFECT_ID,
  escalatedFields,
  LEASE,
  liveChecks,
  OTHER_EFFECT_ID,
  PREMISES,
  personApprovedSteps,
  REFUND,
  refundResult,
  type Step,
} from '../support/entries.ts';
import { buildInboxWorld } from '../support/inbox-world.ts';

// verifyCheckedChain skips the JSON round trip and the re-hash for entries a journal read has
// checked; for every such chain it must say `valid` exactly when verifyReceipt does. fast-check
// prints the seed and path of any failing case, so it can be replayed.

const policyLease = { by: 'policy', rules: ['amount under $50'] };

/** Whole chains as the gate and the inbox write them, valid and not. */
const TEMPLATES: readonly (readonly Step[])[] = [
  committedSteps(),
  [...committedSteps(), ['CONFIRMED', confirmedFields()]],
  committedSteps({ lease: policyLease }),
  dispatchedSteps(),
  [...dispatchedSteps(), ['AMBIGUOUS', { error: 'timeout' }]],
  [...dispatchedSteps(), ['REFUSED', { resolves: true, code: 'target_error', reason: 'card_declined' }]],
  [...dispatchedSteps(), ['COMMITTED', { via: 'recovery-reapply', result: refundResult(), rechecked: liveChecks() }]],
  personApprovedSteps(),
  [...personApprovedSteps(), ['CONFIRMED', confirmedFields()]],
  [
    ['PROPOSED', { agent: 'refund-bot', lease: null, premises: PREMISES, effect: REFUND }],
    ['ESCALATED', escalatedFields()],
  ],
  // Sent twice, each send committed.
  [...committedSteps(), ['DISPATCHED', { effect: REFUND, lease: LEASE, premises: PREMISES, checks: liveChecks() }], ['COMMITTED', { result: refundResult() }]],
  // Sent with no authority recorded.
  committedSteps().filter(([kind]) => kind !== 'AUTHORIZED'),
  // A send on a broken premise that never landed, then a good send: only the second one counts.
  [
    ...dispatchedSteps({ checks: liveChecks({ violations: ['order eligible'] }) }),
    ['REFUSED', { resolves: true, code: 'rate_limited', reason: 'try again' }],
    ['DISPATCHED', { effect: REFUND, lease: LEASE, premises: PREMISES, checks: liveChecks() }],
    ['COMMITTED', { result: refundResult() }],
  ],
  // Refused by the target, then confirmed as if it had landed.
  [...dispatchedSteps(), ['REFUSED', { resolves: true, code: 'target_error', reason: 'card_declined' }], ['CONFIRMED', confirmedFields()]],
  [
    ['PROPOSED', { agent: 'refund-bot', lease: null, premises: PREMISES, effect: REFUND }],
    ['ESCALATED', escalatedFields()],
    ['DECIDED', decidedFields({ decision: 'reject' })],
  ],
];

/** Steps that, put anywhere, make realistic mistakes: a second send, a lost authority, a foreign confirmation. */
const EXTRA_STEPS: readonly Step[] = [
  ['DISPATCHED', { effect: REFUND, lease: LEASE, premises: PREMISES, checks: liveChecks() }],
  ['DISPATCHED', { effect: REFUND, lease: policyLease, premises: PREMISES, checks: liveChecks({ violations: ['order eligible'] }) }],
  ['DISPATCHED', { effect: { ...REFUND, amount: 9_000 }, lease: LEASE, premises: PREMISES, checks: liveChecks({ lease: { max_cents: 5_000 } }) }],
  ['AUTHORIZED', { lease: LEASE }],
  ['COMMITTED', { result: refundResult() }],
  ['COMMITTED', { via: 'retry-idempotent', result: refundResult(), rechecked: { lease_live: false } }],
  ['COMMITTED', { found: 're_other' }],
  ['AMBIGUOUS', { error: 'timeout' }],
  ['REFUSED', { resolves: true, code: 'target_error', reason: 'card_declined' }],
  ['REFUSED', { reason: 'stale_premise' }],
  ['CONFIRMED', confirmedFields()],
  ['CONFIRMED', confirmedFields({ refund: 're_other' })],
  ['CONFIRMED', confirmedFields({ amount: 1 })],
  ['CONFIRMED', confirmedFields({ status: 'failed' })],
  ['ESCALATED', escalatedFields({ reason: 'stale_premise' })],
  ['DECIDED', decidedFields()],
  ['DECIDED', decidedFields({ decision: 'repair', by: 'bob' })],
  ['DECIDED', { at_ms: 1, by: 'eve', decision: 'approve', escalation: 'nope', group: 'refunds', members: ['ann'], repair: null }],
  ['PROPOSED', { agent: 'refund-bot', lease: LEASE, premises: PREMISES, effect: REFUND }],
];

type Edit = { at: number; op: 'insert'; step: number } | { at: number; op: 'remove' } | { at: number; op: 'swap' };

const edit: fc.Arbitrary<Edit> = fc.oneof(
  { arbitrary: fc.record({ at: fc.nat(), op: fc.constant('insert' as const), step: fc.nat(EXTRA_STEPS.length - 1) }), weight: 4 },
  { arbitrary: fc.record({ at: fc.nat(), op: fc.constant('remove' as const) }), weight: 1 },
  { arbitrary: fc.record({ at: fc.nat(), op: fc.constant('swap' as const) }), weight: 1 },
);

/** Apply step edits, seal the chain, then apply entry-order edits (which break links but keep hashes). */
function chainOf(template: readonly Step[], edits: readonly Edit[]): Entry[] | null {
  const steps = [...template];
  for (const e of edits) {
    if (e.op === 'insert') steps.splice(e.at % (steps.length + 1), 0, EXTRA_STEPS[e.step]!);
    if (e.op === 'remove' && steps.length > 0) steps.splice(e.at % steps.length, 1);
  }
  let entries: Entry[];
  try {
    entries = buildChain(EFFECT_ID, steps);
  } catch {
    // A DECIDED or a person lease with no escalation before it to cite: not a chain anyone writes.
    return null;
  }
  for (const e of edits) {
    if (e.op !== 'swap' || entries.length < 2) continue;
    const i = e.at % (entries.length - 1);
    [entries[i], entries[i + 1]] = [entries[i + 1]!, entries[i]!];
  }
  return entries;
}

async function agrees(effectId: string, entries: readonly Entry[]): Promise<boolean> {
  const expected = (await verifyReceipt({ effect_id: effectId, entries: [...entries] })).valid;
  expect(verifyCheckedChain(effectId, entries)).toBe(expected);
  return expected;
}

describe('verifyCheckedChain: the same valid as verifyReceipt for checked entries', () => {
  it('on every template as written', async () => {
    for (const template of TEMPLATES) await agrees(EFFECT_ID, buildChain(EFFECT_ID, template));
    expect(TEMPLATES.map((t) => verifyCheckedChain(EFFECT_ID, buildChain(EFFECT_ID, t)))).toContain(true);
  });

  it('on chains with sends added, lost or reordered, and foreign or empty ones', async () => {
    let invalid = 0;
    await fc.assert(
      fc.asyncProperty(fc.nat(TEMPLATES.length - 1), fc.array(edit, { maxLength: 3 }), fc.boolean(), async (which, edits, foreign) => {
        const entries = chainOf(TEMPLATES[which]!, edits);
        fc.pre(entries !== null);
        const effectId = foreign ? OTHER_EFFECT_ID : EFFECT_ID;
        if (!(await agrees(effectId, entries))) invalid += 1;
      }),
      { numRuns: 1_500 },
    );
    await agrees(EFFECT_ID, []);
    // The runs must reach both answers to prove anything.
    expect(invalid).toBeGreaterThan(100);
  });

  it('on every chain of a busy inbox day: cleared, approved, rejected, repaired, overdue', async () => {
    const world = buildInboxWorld();
    const amounts = [20, 80, 30, 250, 90, 10, 45, 400];
    const requests = amounts.map((amount, i) => world.request(amount, i === 5 ? { flagged: true } : {}));
    for (const r of requests) {
      world.clock.nowMs += 60_000;
      await world.inbox.submit(r);
    }
    await world.inbox.approve(world.effectIdOf(requests[1]!), 'ana');
    await world.inbox.reject(world.effectIdOf(requests[5]!), 'rita');
    world.clock.nowMs += 5 * 3_600_000;
    await world.inbox.tick();
    await world.inbox.approve(world.effectIdOf(requests[3]!), 'fm');
    const ids = new Set((await world.journal.scan(0, 1_000_000)).map(({ entry }) => entry.effect_id));
    for (const id of ids) await agrees(id, await world.journal.entries(id));
  });
});
