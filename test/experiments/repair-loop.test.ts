import { describe, expect, it } from 'vitest';
import { MemoryJournal } from '../../db/journal-store.ts';
import type { JsonObject } from '../../shared/json.ts';
import { Gate } from '../../server/gate/gate.ts';
import { type Approval, Envelope } from '../../experiments/envelope.ts';
import { handDollarsFor, REPAIR_KINDS, REPAIR_SYSTEMS, type RepairTally, repairMix, runRepairLoop } from '../../experiments/repair-loop.ts';
import { Shop, ShopTarget } from '../../experiments/repair-loop-shop.ts';
import { ProtectedRefund } from '../../experiments/repair-loop-tools.ts';

/** The seed page's repair_loop table: no person, person, wrong payouts, overpaid dollars. */
const PUBLISHED = {
  'no gate': [100, 0, 40, 558],
  'hand check': [97, 3, 0, 0],
  interlock: [83, 17, 13, 130],
  'interlock+repair': [97, 3, 0, 0],
} as const;

/** inbox §21, by kind: no person / person / wrong for no gate | interlock | interlock+repair. */
const BY_KIND = `
routine	60/0/0	60/0/0	60/0/0
partial_hand	12/0/12	0/12/0	12/0/0
full_hand	5/0/5	0/5/0	5/0/0
overshoot	10/0/10	10/0/10	10/0/0
stubborn	3/0/3	3/0/3	0/3/0
crash	5/0/5	5/0/0	5/0/0
duplicate	5/0/5	5/0/0	5/0/0
`
  .trim()
  .split('\n')
  .map((line) => line.split('\t'));

const result = await runRepairLoop();
const cell = (t: RepairTally) => `${t.noPerson}/${t.person}/${t.wrong}`;

describe('repair_loop experiment (inbox §21)', () => {
  it('the mix: 100 orders in the published proportions; the partial hand refunds add up to $128', () => {
    const kinds = repairMix();
    const counts = Object.fromEntries(REPAIR_KINDS.map((k) => [k, kinds.filter((x) => x === k).length]));
    expect(counts).toEqual({ routine: 60, partial_hand: 12, full_hand: 5, overshoot: 10, stubborn: 3, crash: 5, duplicate: 5 });
    const partial = kinds.reduce((sum, k, i) => sum + (k === 'partial_hand' ? handDollarsFor(k, i) : 0), 0);
    expect(partial).toBe(128);
  });

  it.each(REPAIR_SYSTEMS.map((s) => [s]))('%s: the row equals the published one', (system) => {
    const t = result.systems[system];
    expect([t.noPerson, t.person, t.wrong, t.overpaidDollars]).toEqual(PUBLISHED[system]);
  });

  it.each(BY_KIND.map((row) => [row[0]!, row]))('%s: the by-kind breakdown equals the published one', (kind, row) => {
    const k = kind as (typeof REPAIR_KINDS)[number];
    expect([cell(result.byKind['no gate'][k]), cell(result.byKind.interlock[k]), cell(result.byKind['interlock+repair'][k])]).toEqual(row.slice(1));
  });

  it('the hand check lands on the same totals as interlock+repair, kind by kind', () => {
    expect(result.byKind['hand check']).toEqual(result.byKind['interlock+repair']);
  });

  it('the experiment claims hold', () => {
    // seed: test_repair.py test_experiment_claims
    const repair = result.systems['interlock+repair'];
    const plain = result.systems.interlock;
    expect([repair.wrong, repair.overpaidDollars]).toEqual([0, 0]);
    expect(repair.person).toBeLessThan(plain.person);
    // Without an approval nothing bounds the amount: only the overshoots are overpaid, never a stale send.
    expect(plain.wrong).toBe(result.byKind.interlock.overshoot.wrong + result.byKind.interlock.stubborn.wrong);
    expect(result.systems['no gate'].wrong).toBeGreaterThan(plain.wrong);
    // The only people left under repair are the agents that would not take what the case allows.
    expect(repair.person).toBe(result.byKind['interlock+repair'].stubborn.person);
  });
});

/** A fresh shop with one order and a gated tool over it. */
function gatedWorld(options: { approvals?: boolean; handDollars?: number; crashOnce?: boolean } = {}) {
  const shop = new Shop();
  shop.addOrder('o1', { handDollars: options.handDollars ?? 0, crashOnce: options.crashOnce ?? false });
  const clock = { wallMs: 1_700_000_000_000 };
  const tool = new ProtectedRefund(shop, new MemoryJournal({ wallClockMs: () => clock.wallMs }), { approvals: options.approvals ?? true, attempts: 3, clock });
  return { shop, tool, envelope: tool.envelope!, seen: () => shop.getOrder('o1') };
}

describe('repair loop: the protected tool with an approval (seed test_repair.py)', () => {
  it('overshoot is refused with the limit, then the corrected amount goes once', async () => {
    // seed: test_repair.py test_overshoot_is_refused_with_the_limit_then_corrected
    const { shop, tool, seen } = gatedWorld();
    const refused = await tool.refund('o1', 30, seen());
    expect(refused).toMatchObject({ ok: false, status: 'REFUSED:lease', mayRetry: true });
    expect(refused.message).toContain('maximum of 20');
    expect(await tool.refund('o1', 20, seen())).toMatchObject({ ok: true, status: 'COMMITTED' });
    expect(shop.total('o1')).toBe(20);
  });

  it('a stale fact is named and a corrected call goes once', async () => {
    // seed: test_repair.py test_stale_fact_is_named_and_a_corrected_call_goes_once
    const { shop, tool, seen } = gatedWorld({ handDollars: 8 });
    const read = seen();
    const refused = await tool.refund('o1', 20, read);
    expect(refused).toMatchObject({ status: 'REFUSED:stale_premise', mayRetry: true });
    expect(refused.message).toContain('refunded_total');
    expect(await tool.refund('o1', 12, seen())).toMatchObject({ status: 'COMMITTED' });
    expect(await tool.refund('o1', 12, seen())).toMatchObject({ status: 'DUPLICATE_IGNORED' });
    expect(shop.total('o1')).toBe(20);
  });

  it('a change between the agent read and its call is caught', async () => {
    // seed: test_repair.py test_a_change_between_the_agents_read_and_its_call_is_caught
    const { shop, tool } = gatedWorld();
    const read = shop.getOrder('o1');
    shop.refund('o1', 1, 'dashboard');
    expect((await tool.refund('o1', 10, read)).status).toBe('REFUSED:stale_premise');
    expect(shop.total('o1')).toBe(1);
  });

  it('without an approval a refusal names the fact but stays refused', async () => {
    // seed: test_repair.py test_without_an_approval_a_refusal_names_the_fact_but_stays_refused
    const { shop, tool, seen } = gatedWorld({ approvals: false, handDollars: 8 });
    const refused = await tool.refund('o1', 20, seen());
    expect(refused).toMatchObject({ ok: false, status: 'REFUSED:stale_premise', mayRetry: false });
    expect(refused.message).toContain('refunded_total');
    expect(shop.total('o1')).toBe(8);
  });

  it('the attempts cap stops a model that keeps re-deciding', async () => {
    // seed: test_repair.py test_attempts_cap_stops_a_model_that_keeps_re_deciding
    const { shop, tool, seen } = gatedWorld();
    for (const amount of [30, 25]) expect(await tool.refund('o1', amount, seen())).toMatchObject({ status: 'REFUSED:lease', mayRetry: true });
    // The third attempt is still judged on its merits, but it uses up the approval's attempts.
    expect(await tool.refund('o1', 21, seen())).toMatchObject({ status: 'REFUSED:lease', mayRetry: false });
    const fourth = await tool.refund('o1', 20, seen());
    expect(fourth).toMatchObject({ status: 'REFUSED:lease', mayRetry: false });
    expect(fourth.message).toContain('attempts cap of 3 reached');
    expect(shop.total('o1')).toBe(0);
  });

  it('the attempts cap counts the same arguments sent again', async () => {
    // seed: test_repair.py test_attempts_cap_counts_the_same_arguments_sent_again
    const { shop, tool, seen } = gatedWorld();
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push(await tool.refund('o1', 30, seen()));
    expect(statuses.map((s) => s.mayRetry)).toEqual([true, true, false]);
    expect((await tool.refund('o1', 20, seen())).message).toContain('attempts cap');
    expect(shop.total('o1')).toBe(0);
  });

  it('a revoked approval is not retryable', async () => {
    // seed: test_repair.py test_revoked_approval_is_not_retryable
    const { shop, tool, envelope, seen } = gatedWorld();
    envelope.revoke('case-o1', 'support');
    const refused = await tool.refund('o1', 20, seen());
    expect(refused).toMatchObject({ ok: false, status: 'REFUSED:lease', mayRetry: false });
    expect(refused.message).toContain('revoked');
    expect(shop.total('o1')).toBe(0);
  });

  it('a crash holds the approval until recovery settles it', async () => {
    // seed: test_repair.py test_crash_holds_the_approval_until_recovery_settles_it
    const { shop, tool, envelope, seen } = gatedWorld({ crashOnce: true });
    expect((await tool.refund('o1', 20, seen())).status).toBe('IN_FLIGHT');
    expect(envelope.holder('case-o1')).not.toBeNull();
    expect(await tool.refund('o1', 20, seen())).toMatchObject({ ok: false, status: 'IN_FLIGHT' });
    await tool.recover();
    expect(await tool.refund('o1', 20, seen())).toMatchObject({ ok: true, status: 'DUPLICATE_IGNORED' });
    expect(shop.total('o1')).toBe(20);
  });
});

/** A gate over the shop with an Envelope, for approvals built by hand. */
function envelopeGate(attempts: number | null = 3) {
  const shop = new Shop();
  shop.addOrder('o1');
  const envelope = new Envelope({ attempts, nowMs: () => 1_000 });
  const gate = new Gate({ journal: new MemoryJournal({ wallClockMs: () => 1_000 }), target: new ShopTarget(shop), leases: envelope, wallClockMs: () => 1_000 });
  const approval: Approval = { id: 'case-o1', match: { order_id: 'o1' }, max: { amount: 20 } };
  const submit = (requestKey: string, amount: number, lease: Approval = approval) =>
    gate.submit({ agent: 'refund-agent', lease, requestKey, premises: shop.getOrder('o1'), effect: { order_id: 'o1', amount } });
  return { shop, envelope, gate, approval, submit };
}

describe('Envelope lease store (core §5.3)', () => {
  it('a duplicate is ignored and a second decision cannot use the approval', async () => {
    // seed: test_repair.py test_duplicate_is_ignored_and_a_second_decision_cannot_use_the_approval
    const { shop, submit } = envelopeGate();
    expect((await submit('first', 20)).status).toBe('COMMITTED');
    expect((await submit('first', 20)).status).toBe('DUPLICATE_IGNORED');
    expect((await submit('second', 10)).status).toBe('REFUSED:lease_used');
    expect(shop.total('o1')).toBe(20);
  });

  it('a match never lets a boolean stand for a number, nor another order through', () => {
    const envelope = new Envelope({ nowMs: () => 0 });
    const approval: Approval = { id: 'a', match: { order_id: 'o1', express: 1 } };
    expect(envelope.problems(approval, { order_id: 'o1', express: 1 })).toEqual([]);
    expect(envelope.problems(approval, { order_id: 'o1', express: true })).toHaveLength(1);
    expect(envelope.problems(approval, { order_id: 'o2', express: 1 })).toHaveLength(1);
  });

  it.each([
    ['a boolean maximum', true, 10],
    ['a string maximum', '20', 10],
    ['a null maximum', null, 10],
    ['a boolean amount', 20, true],
    ['a string amount', 20, '10'],
    ['a missing amount', 20, undefined],
  ])('an invalid maximum fails closed: %s', (_name, maximum, amount) => {
    // seed: test_approval_recovery_fixes.py test_invalid_maximum_fails_closed
    const envelope = new Envelope({ nowMs: () => 0 });
    const effect: JsonObject = amount === undefined ? { order_id: 'o1' } : { order_id: 'o1', amount };
    expect(envelope.allows({ id: 'a', max: { amount: maximum } }, effect)).toBe(false);
  });

  it('a non-finite maximum fails closed', () => {
    // seed: test_approval_recovery_fixes.py test_nonfinite_amounts_never_reach_the_function
    const envelope = new Envelope({ nowMs: () => 0 });
    for (const maximum of [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY]) {
      expect(envelope.problems({ id: 'a', max: { amount: maximum } }, { amount: 10 })).not.toEqual([]);
    }
    expect(envelope.problems({ id: 'a', max: { amount: 20 } }, { amount: Number.POSITIVE_INFINITY })).not.toEqual([]);
  });

  it('no id, an expired approval, and a non-numeric expiry are not live', () => {
    const envelope = new Envelope({ nowMs: () => 5_000 });
    expect(envelope.problems({ match: {} })).toEqual(['no approval']);
    expect(envelope.problems(null)).toEqual(['no approval']);
    expect(envelope.isLive({ id: 'a', expires_ms: 4_999 })).toBe(false);
    expect(envelope.isLive({ id: 'a', expires_ms: 5_000 })).toBe(true);
    expect(envelope.isLive({ id: 'a', expires_ms: 'tomorrow' })).toBe(false);
  });

  it('the first attempts are judged on their merits, and the last allowed one stays valid during recovery', () => {
    // seed: test_approval_recovery_fixes.py test_last_allowed_attempt_remains_valid_during_recovery
    const envelope = new Envelope({ attempts: 2, nowMs: () => 0 });
    const approval: Approval = { id: 'a', max: { amount: 20 } };
    expect(envelope.allows(approval, { amount: 30 })).toBe(false);
    expect(envelope.allows(approval, { amount: 20 })).toBe(true);
    // Seen again (a recovery recheck), the second attempt is still among the first two.
    expect(envelope.allows(approval, { amount: 20 })).toBe(true);
    expect(envelope.allows(approval, { amount: 10 })).toBe(false);
    expect(envelope.isLive(approval)).toBe(false);
  });

  it('the attempt key is the approval own, else a hash of the effect', () => {
    const envelope = new Envelope({ nowMs: () => 0 });
    expect(envelope.attemptKey({ id: 'a', attempt: 'k1' }, { amount: 1 })).toBe('k1');
    const key = envelope.attemptKey({ id: 'a' }, { amount: 1, order_id: 'o1' });
    expect(key).toMatch(/^[0-9a-f]{16}$/);
    expect(envelope.attemptKey({ id: 'a' }, { order_id: 'o1', amount: 1 })).toBe(key);
  });

  it('a reservation is never released and names its holder', async () => {
    const { envelope, approval, submit } = envelopeGate(null);
    expect(envelope.reserve(approval, 'e1')).toEqual([]);
    expect(envelope.reserve(approval, 'e1')).toEqual([]);
    expect(envelope.reserve(approval, 'e2')).toEqual(['approval case-o1 already used by e1']);
    expect((await submit('any', 5)).status).toBe('REFUSED:lease_used');
    expect(envelope.describeEffect(approval, { order_id: 'o1', amount: 5 })).toMatchObject({ used_by: 'e1', problems: [] });
  });
});
