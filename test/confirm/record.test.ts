import { describe, expect, it } from 'vitest';
import { isOpenDispatch } from '../../server/journal/chain.ts';
import { verifyReceipt } from '../../server/receipts/verify.ts';
import {
  type ConfirmEventResult,
  confirmationBlocker,
  confirmEvent,
  type RecordResult,
  readRefund,
  recordConfirmation,
} from '../../server/confirm/record.ts';
import type { StripeEventLike } from '../../server/confirm/signature.ts';
import {
  AMOUNT,
  buildRefund,
  buildRefundEvent,
  committedSteps,
  confirmedStatuses,
  EFFECT_ID,
  journalWith,
  PAYMENT_INTENT,
  REFUND_ID,
  resendInFlightSteps,
  SIGNED_AT_S,
  sentSteps,
} from '../support/confirm-world.ts';
import type { Step } from '../support/entries.ts';

/** A verified event (what verifyWebhook returns) about the effect's refund. */
function refundEvent(overrides: Parameters<typeof buildRefundEvent>[0] = {}): StripeEventLike {
  return buildRefundEvent(overrides) as StripeEventLike;
}

describe('confirmEvent: recording a verified webhook (core §8.2, §8.3)', () => {
  // seed: tests/test_confirmations.py Recording test_webhook_appends_confirmed
  it('a refund event for a sent refund appends CONFIRMED with exactly via, event, refund, status, amount, payment_intent, created', async () => {
    const journal = await journalWith(committedSteps());
    expect(await confirmEvent(journal, refundEvent())).toBe('CONFIRMED');
    const chain = await journal.entries(EFFECT_ID);
    const confirmed = chain.at(-1)!;
    expect(confirmed.kind).toBe('CONFIRMED');
    const { effect_id, kind, ts_ms, prev, hash, ...fields } = confirmed;
    expect(fields).toEqual({
      via: 'webhook',
      event: 'evt_confirm_1',
      refund: REFUND_ID,
      status: 'pending',
      amount: AMOUNT,
      payment_intent: PAYMENT_INTENT,
      created: SIGNED_AT_S,
    });
    expect([effect_id, kind, prev]).toEqual([EFFECT_ID, 'CONFIRMED', chain.at(-2)!.hash]);
    expect(typeof ts_ms === 'number' && typeof hash === 'string').toBe(true);
    expect((await verifyReceipt({ effect_id: EFFECT_ID, entries: chain })).valid).toBe(true);
  });

  // seed: tests/test_confirmations.py Recording test_webhook_before_ack_does_not_close_dispatch
  it('a webhook that arrives before the send is answered is recorded and leaves the dispatch open', async () => {
    const journal = await journalWith(sentSteps());
    expect(await confirmEvent(journal, refundEvent())).toBe('CONFIRMED');
    expect(isOpenDispatch(await journal.entries(EFFECT_ID))).toBe(true);
    expect(await journal.inFlight()).toEqual([EFFECT_ID]);
  });

  // seed: tests/test_confirmations.py Recording test_non_refund_event_ignored
  it.each(['charge.refunded', 'payment_intent.succeeded', 'charge.dispute.created', 'refund.deleted'])(
    'a %s event is IGNORED:type and nothing is recorded',
    async (type) => {
      const journal = await journalWith(committedSteps());
      expect(await confirmEvent(journal, refundEvent({ type }))).toBe('IGNORED:type');
      expect(await confirmedStatuses(journal)).toEqual([]);
    },
  );

  it('an event with no type or no data is ignored, not thrown on', async () => {
    const journal = await journalWith(committedSteps());
    expect(await confirmEvent(journal, { livemode: false } as StripeEventLike)).toBe('IGNORED:type');
    expect(await confirmEvent(journal, { livemode: false, type: 'refund.updated' } as StripeEventLike)).toBe('IGNORED:unknown_effect');
  });

  it.each(['refund.created', 'refund.updated', 'refund.failed'])('a %s event counts', async (type) => {
    const journal = await journalWith(committedSteps());
    expect(await confirmEvent(journal, refundEvent({ type }))).toBe('CONFIRMED');
  });

  // seed: tests/test_confirmations.py Recording test_unknown_effect_other_payment_intent_or_amount_never_recorded
  it.each<[string, Parameters<typeof buildRefundEvent>[0], ConfirmEventResult]>([
    ['no metadata', { refund: { metadata: {} } }, 'IGNORED:unknown_effect'],
    ['metadata of someone else', { refund: { metadata: { order_id: '881' } } }, 'IGNORED:unknown_effect'],
    ['an effect id with no chain here', { refund: { metadata: { interlock_effect_id: 'aaaaaaaaaaaa' } } }, 'IGNORED:unknown_effect'],
    ['an effect id that is not 12 hex', { refund: { metadata: { interlock_effect_id: '../../etc' } } }, 'IGNORED:unknown_effect'],
    ['another payment intent', { refund: { payment_intent: 'pi_someone_else' } }, 'REFUSED:mismatch'],
    ['another amount', { refund: { amount: AMOUNT + 1 } }, 'REFUSED:mismatch'],
    ['another refund id than the commit recorded', { refund: { id: 're_other' } }, 'REFUSED:mismatch'],
    ['a refund object without an amount', { refund: { amount: null } }, 'REFUSED:mismatch'],
    ['a refund object without a status', { refund: { status: null } }, 'REFUSED:mismatch'],
  ])('never recorded: %s', async (_name, overrides, expected) => {
    const journal = await journalWith(committedSteps());
    const before = await journal.entries(EFFECT_ID);
    expect(await confirmEvent(journal, refundEvent(overrides))).toBe(expected);
    expect(await journal.entries(EFFECT_ID)).toEqual(before);
  });

  it('a refund for an effect that was refused and never dispatched is a mismatch', async () => {
    const refusedOnly: Step[] = [
      ['PROPOSED', { agent: 'refund-bot', lease: 'L', premises: {}, effect: { payment_intent: PAYMENT_INTENT, amount: AMOUNT } }],
      ['REFUSED', { code: 'lease', reason: 'the authority behind it is not live' }],
    ];
    const journal = await journalWith(refusedOnly);
    expect(await confirmEvent(journal, refundEvent({ refund: { status: 'succeeded' } }))).toBe('REFUSED:mismatch');
    expect(await confirmedStatuses(journal)).toEqual([]);
  });

  it('the expected payment intent is the one the last send carried', async () => {
    const journal = await journalWith(committedSteps(REFUND_ID, { payment_intent: 'pi_second', amount: AMOUNT }));
    expect(await confirmEvent(journal, refundEvent())).toBe('REFUSED:mismatch');
    expect(await confirmEvent(journal, refundEvent({ refund: { payment_intent: 'pi_second' } }))).toBe('CONFIRMED');
  });

  // seed: tests/test_confirmations.py Recording test_replayed_event_and_same_status_are_duplicates
  it('a replayed event id is DUPLICATE_IGNORED, and so is a new event repeating the last status', async () => {
    const journal = await journalWith(committedSteps());
    expect(await confirmEvent(journal, refundEvent())).toBe('CONFIRMED');
    expect(await confirmEvent(journal, refundEvent())).toBe('DUPLICATE_IGNORED');
    expect(await confirmEvent(journal, refundEvent({ refund: { status: 'succeeded' } }))).toBe('DUPLICATE_IGNORED');
    expect(await confirmEvent(journal, refundEvent({ id: 'evt_confirm_2' }))).toBe('DUPLICATE_IGNORED');
    expect(await confirmedStatuses(journal)).toEqual(['pending']);
  });

  // seed: tests/test_confirmations.py Recording test_status_change_is_recorded
  it('a status change under a new event is recorded: pending, then succeeded', async () => {
    const journal = await journalWith(committedSteps());
    expect(await confirmEvent(journal, refundEvent())).toBe('CONFIRMED');
    expect(await confirmEvent(journal, refundEvent({ id: 'evt_confirm_2', type: 'refund.updated', refund: { status: 'succeeded' } }))).toBe(
      'CONFIRMED',
    );
    expect(await confirmedStatuses(journal)).toEqual(['pending', 'succeeded']);
    expect((await verifyReceipt({ effect_id: EFFECT_ID, entries: await journal.entries(EFFECT_ID) })).confirmed_by_target).toBe(true);
  });
});

describe('recordConfirmation: status precedence (core §8.3: succeeded 1, failed and canceled 2, the rest 0)', () => {
  // seed: tests/test_escalation_fixes.py Confirmations test_late_pending_does_not_downgrade_succeeded,
  // test_late_succeeded_does_not_overwrite_failed
  const table: Array<[string[], string, RecordResult]> = [
    [['succeeded'], 'pending', 'IGNORED:out_of_order'],
    [['pending', 'succeeded'], 'pending', 'IGNORED:out_of_order'],
    [['succeeded'], 'requires_action', 'IGNORED:out_of_order'],
    [['failed'], 'succeeded', 'IGNORED:out_of_order'],
    [['canceled'], 'succeeded', 'IGNORED:out_of_order'],
    [['failed'], 'pending', 'IGNORED:out_of_order'],
    [['failed'], 'canceled', 'CONFIRMED'],
    [['pending'], 'requires_action', 'CONFIRMED'],
    [['pending'], 'succeeded', 'CONFIRMED'],
    [['succeeded'], 'failed', 'CONFIRMED'],
    [['pending'], 'pending', 'DUPLICATE_IGNORED'],
    [['succeeded'], 'succeeded', 'DUPLICATE_IGNORED'],
    [['failed'], 'failed', 'DUPLICATE_IGNORED'],
    [[], 'succeeded', 'CONFIRMED'],
  ];
  it.each(table)('after %j, a new event with status %s is %s', async (earlier, status, expected) => {
    const journal = await journalWith(committedSteps());
    for (const [i, s] of earlier.entries()) {
      expect(await recordConfirmation(journal, EFFECT_ID, { id: REFUND_ID, amount: AMOUNT, payment_intent: PAYMENT_INTENT, status: s }, {
        via: 'webhook',
        event: `evt_${i}`,
        created: SIGNED_AT_S,
      })).toBe('CONFIRMED');
    }
    const refund = { id: REFUND_ID, amount: AMOUNT, payment_intent: PAYMENT_INTENT, status };
    expect(await recordConfirmation(journal, EFFECT_ID, refund, { via: 'webhook', event: 'evt_new', created: SIGNED_AT_S })).toBe(expected);
    expect(await confirmedStatuses(journal)).toEqual(expected === 'CONFIRMED' ? [...earlier, status] : earlier);
  });

  it('a duplicate event id is DUPLICATE_IGNORED even when it carries another status', async () => {
    const journal = await journalWith(committedSteps());
    const source = { via: 'webhook', event: 'evt_same', created: SIGNED_AT_S } as const;
    const refund = { id: REFUND_ID, amount: AMOUNT, payment_intent: PAYMENT_INTENT, status: 'pending' };
    expect(await recordConfirmation(journal, EFFECT_ID, refund, source)).toBe('CONFIRMED');
    expect(await recordConfirmation(journal, EFFECT_ID, { ...refund, status: 'succeeded' }, source)).toBe('DUPLICATE_IGNORED');
  });

  it('lookups carry no event id, so only the status rule stops a repeat', async () => {
    const journal = await journalWith(committedSteps());
    const source = { via: 'lookup', event: null, created: SIGNED_AT_S } as const;
    const refund = { id: REFUND_ID, amount: AMOUNT, payment_intent: PAYMENT_INTENT, status: 'succeeded' };
    expect(await recordConfirmation(journal, EFFECT_ID, refund, source)).toBe('CONFIRMED');
    expect(await recordConfirmation(journal, EFFECT_ID, refund, source)).toBe('DUPLICATE_IGNORED');
    expect(await recordConfirmation(journal, EFFECT_ID, { ...refund, status: 'pending' }, source)).toBe('IGNORED:out_of_order');
  });

  // seed: tests/test_escalation_fixes.py Confirmations test_receipt_reads_final_status_by_precedence
  it.each<[string[], boolean | 'pending']>([
    [['pending', 'succeeded', 'pending'], true],
    [['pending', 'failed', 'succeeded'], false],
    [['succeeded', 'failed', 'canceled'], false],
    [['pending', 'requires_action'], 'pending'],
  ])('delivered in order %j, the receipt reads confirmed_by_target %s', async (statuses, expected) => {
    const journal = await journalWith(committedSteps());
    for (const [i, status] of statuses.entries()) await confirmEvent(journal, refundEvent({ id: `evt_${i}`, refund: { status } }));
    expect((await verifyReceipt({ effect_id: EFFECT_ID, entries: await journal.entries(EFFECT_ID) })).confirmed_by_target).toBe(expected);
  });
});

describe('confirmationBlocker: the pure check run inside the write lock', () => {
  const refund = { id: REFUND_ID, amount: AMOUNT, payment_intent: PAYMENT_INTENT, status: 'succeeded' };

  it('rules 1-6 in order, first hit wins', async () => {
    const chain = await (await journalWith(committedSteps())).entries(EFFECT_ID);
    expect(confirmationBlocker(chain, refund, 'evt_1')).toBeNull();
    expect(confirmationBlocker(chain.slice(0, 2), refund, 'evt_1')).toBe('mismatch');
    expect(confirmationBlocker(chain, { ...refund, amount: 1 }, 'evt_1')).toBe('mismatch');
    expect(confirmationBlocker(chain, { ...refund, payment_intent: 'pi_x' }, 'evt_1')).toBe('mismatch');
    expect(confirmationBlocker(chain, { ...refund, id: 're_x' }, 'evt_1')).toBe('mismatch');
  });

  it('before a commit, any refund id on the right payment and amount passes (the webhook may beat the answer)', async () => {
    const chain = await (await journalWith(sentSteps())).entries(EFFECT_ID);
    expect(confirmationBlocker(chain, { ...refund, id: 're_any' }, null)).toBeNull();
  });

  it('readRefund takes a Stripe refund, an expanded payment intent, and refuses a partial object', () => {
    expect(readRefund(buildRefund())).toEqual({ id: REFUND_ID, amount: AMOUNT, payment_intent: PAYMENT_INTENT, status: 'pending' });
    expect(readRefund(buildRefund({ payment_intent: { id: PAYMENT_INTENT, object: 'payment_intent' } }))?.payment_intent).toBe(PAYMENT_INTENT);
    expect(readRefund(buildRefund({ amount: 1.5 }))).toBeNull();
    expect(readRefund(buildRefund({ id: 7 }))).toBeNull();
    expect(readRefund(null)).toBeNull();
    expect(readRefund([buildRefund()])).toBeNull();
  });
});

describe('confirmations from the escalation fixes', () => {
  // seed: tests/test_escalation_fixes.py ConfirmationPayment test_refund_on_other_payment_is_refused
  it('a refund on another payment than the one the send recorded is refused, whatever the refund says', async () => {
    const journal = await journalWith(committedSteps());
    expect(await confirmEvent(journal, refundEvent({ refund: { payment_intent: 'pi_caller_payment', status: 'succeeded' } }))).toBe(
      'REFUSED:mismatch',
    );
    expect(await confirmedStatuses(journal)).toEqual([]);
  });

  // seed: tests/test_escalation_fixes.py Confirmations test_confirmation_of_another_refund_id_is_refused_and_flagged
  it('after a commit, a confirmation of another refund id is refused; had one been written, verify flags it', async () => {
    const journal = await journalWith(committedSteps());
    expect(await confirmEvent(journal, refundEvent({ refund: { id: 're_not_ours', status: 'succeeded' } }))).toBe('REFUSED:mismatch');
    expect(await confirmedStatuses(journal)).toEqual([]);
    // A forger appending it directly, past the recording rule:
    await journal.append('CONFIRMED', EFFECT_ID, {
      via: 'webhook',
      event: 'evt_forged',
      refund: 're_not_ours',
      status: 'succeeded',
      amount: AMOUNT,
      payment_intent: PAYMENT_INTENT,
      created: SIGNED_AT_S,
    });
    const report = await verifyReceipt({ effect_id: EFFECT_ID, entries: await journal.entries(EFFECT_ID) });
    expect(report.problems.map((p) => p.code)).toContain('confirmed_other_refund');
  });

  // seed: tests/test_escalation_fixes.py Confirmations test_confirmed_resend_in_flight_after_resolved_refusal_verifies
  it('a resend a person approved after a target_error, confirmed by a webhook while still in flight, verifies', async () => {
    const journal = await journalWith(resendInFlightSteps());
    expect(await confirmEvent(journal, refundEvent({ refund: { status: 'succeeded' } }))).toBe('CONFIRMED');
    const report = await verifyReceipt({ effect_id: EFFECT_ID, entries: await journal.entries(EFFECT_ID) });
    expect(report.problems).toEqual([]);
    expect(report).toMatchObject({ valid: true, happened: 'unknown', confirmed_by_target: true, approval_verified: true });
  });
});
