import { describe, expect, it } from 'vitest';
import { decideRestoreStep, oneRefundPerEffect, type RefundAtStripe, type RestoreStep } from '../../server/backup/restore-plan.ts';
import { manifestOf } from '../../server/backup/manifest.ts';
import { EPOCH_CHAIN_ID } from '../../shared/entries.ts';
import { restoredLedgerViolations } from './restored-ledger.ts';
import { buildChain, committedSteps, dispatchedSteps, EFFECT_ID, type Step } from '../support/entries.ts';

const proposedOnly: Step[] = dispatchedSteps().slice(0, 1);

describe('decideRestoreStep: what a restore does with a refund Stripe holds, by its chain in the restored journal', () => {
  const rows: [string, Step[], RestoreStep][] = [
    ['no chain: the request came after the backup', [], 'commit'],
    ['bound, not sent: decided and sent after the backup', proposedOnly, 'commit'],
    ['an open dispatch: its COMMITTED came after the backup', dispatchedSteps(), 'commit'],
    ['committed before the backup', committedSteps(), 'known'],
    ['ambiguous in the backup: never sent again, a person decides', [...dispatchedSteps(), ['AMBIGUOUS', { code: 'ambiguous' }]], 'known_ambiguous'],
    [
      'refused after a failed send, yet Stripe has it',
      [...dispatchedSteps(), ['REFUSED', { code: 'target_error', reason: 'failed', resolves: true }]],
      'commit',
    ],
  ];
  it.each(rows)('%s → %s', (_name, steps, expected) => {
    expect(decideRestoreStep(buildChain(EFFECT_ID, steps))).toBe(expected);
  });
});

describe('oneRefundPerEffect', () => {
  const refund = (id: string, effectId: string, created: number): RefundAtStripe => ({
    effect_id: effectId,
    refund: id,
    amount: 100,
    currency: 'usd',
    payment_intent: 'pi_1',
    status: 'succeeded',
    created,
  });
  it('keeps the oldest refund naming an effect; a later one with copied metadata is set apart', () => {
    const { kept, copies } = oneRefundPerEffect([refund('re_b', 'aaaaaaaaaaaa', 20), refund('re_a', 'aaaaaaaaaaaa', 10), refund('re_c', 'bbbbbbbbbbbb', 15)]);
    expect(kept.map((r) => r.refund)).toEqual(['re_a', 're_c']);
    expect(copies.map((r) => r.refund)).toEqual(['re_b']);
  });
});

describe('manifestOf', () => {
  const good = {
    format: 'interlock-backup-v1',
    taken_at_ms: 1_700_000_000_000,
    point: { journal_id: '0123456789abcdef', epoch: 0, entries: 3, last_seq: 3, global_head: 'h', oldest_open_dispatch_ms: null },
    files: { journal: { name: 'interlock.sqlite', sha256: 'a'.repeat(64), bytes: 4096 } },
  };
  it('reads what the backup command writes', () => {
    expect(manifestOf(good)).toEqual(good);
  });
  it.each([
    ['another format', { ...good, format: 'v0' }],
    ['a file under another name', { ...good, files: { journal: { ...good.files.journal, name: '../etc/passwd' } } }],
    ['a sha256 that is no sha256', { ...good, files: { journal: { ...good.files.journal, sha256: 'xyz' } } }],
    ['no point', { ...good, point: null }],
  ])('refuses %s', (_name, value) => {
    expect(manifestOf(value)).toBeNull();
  });
});

describe('restoredLedgerViolations: invariant 3 on a restored journal', () => {
  const refund = { id: 're_1', metadata: { interlock_effect_id: EFFECT_ID } };
  const epoch = (named: string[]) =>
    buildChain(EPOCH_CHAIN_ID, [['EPOCH', { epoch: 1, at_ms: 0, previous: null, stripe: { refunds_not_in_backup: named.map((id) => ({ effect_id: EFFECT_ID, refund: id })) }, key_id: 'k', signature: 's' }]]);
  const lone = buildChain(EFFECT_ID, [['COMMITTED', { via: 'recovery-query', rechecked: null, found: 're_1' }]]);
  it.each([
    ['a refund sent and committed before the backup', buildChain(EFFECT_ID, committedSteps()), []],
    ['a refund known only from Stripe, named by the epoch', [...epoch(['re_1']), ...lone], []],
    ['a refund known only from Stripe that no epoch names', lone, ['a refund the restored journal shows no send of is named by the epoch: abc123def456 is not']],
    ['a refund the restored journal does not hold at all', epoch([]), [
      'the journal holds what landed: abc123def456 has a refund but no COMMITTED',
      'a refund the restored journal shows no send of is named by the epoch: abc123def456 is not',
    ]],
  ])('%s', (_name, entries, expected) => {
    expect(restoredLedgerViolations(entries, [refund])).toEqual(expected);
  });
  it('two refunds for one effect', () => {
    expect(restoredLedgerViolations(buildChain(EFFECT_ID, committedSteps()), [refund, { ...refund, id: 're_2' }])).toEqual([
      'never two refunds for one effect: abc123def456 has re_1, re_2',
    ]);
  });
});
