import { describe, expect, it } from 'vitest';
import type { RefundAnswer } from '../../shared/api.ts';
import type { RefundResult } from '../../shared/client/answers.ts';
import { ConflictingPayloadError, InterlockError, NetworkError } from '../../shared/client/errors.ts';
import { describeAnswer, describeChange, describeError, describeWait } from '../../server/mcp/words.ts';

/** The words a model reads in a tool result: what happened, what changed, the repair, what to do next. */

function result(overrides: Partial<RefundAnswer>, final = true): RefundResult {
  const answer: RefundAnswer = {
    request_id: 'case-7',
    effect_id: '3f1c2a9b0d4e',
    status: 'COMMITTED',
    why: 'the refund was sent to Stripe once',
    currency: 'usd',
    refund: null,
    waiting_for: null,
    changes: [],
    repairs: [],
    receipt: '/v1/receipts/3f1c2a9b0d4e',
    decision: null,
    approvals: null,
    ...overrides,
  };
  return { httpStatus: final ? 200 : 202, final, answer, retryAfterMs: null };
}

const staleOnHundred = {
  why: 'a fact the decision relied on changed after it was made',
  changes: [{ field: 'refunded_by_others', was: 0, now: 3_000 }],
  repairs: [{ code: 'refund_remaining' as const, set: { amount: 7_000 }, why: 'Refund $70.00, what is left of $100.00' }],
};

describe('MCP words', () => {
  it('a refusal says what changed and that the repair is to ask for what is left, under a new request_id', () => {
    expect(describeAnswer(result({ status: 'REFUSED:stale_premise', ...staleOnHundred })).split('\n')).toEqual([
      'Refused (REFUSED:stale_premise): a fact the decision relied on changed after it was made.',
      'What changed: the amount already refunded was $0.00, now $30.00.',
      'Repair: Refund $70.00, what is left of $100.00; the repair is to ask for $70.00 (amount 7000) under a new request_id.',
      'Nothing was sent for this request. A person may be asked to decide it: get_refund with request_id "case-7" shows where it stands.',
      'Request case-7, effect 3f1c2a9b0d4e; verify_receipt checks its signed receipt.',
    ]);
  });

  it('while a person has it, the repair is theirs to accept, and the model is told how to wait', () => {
    const text = describeAnswer(result({ status: 'QUEUED', ...staleOnHundred, why: `an approver must decide: ${staleOnHundred.why}` }, false));
    expect(text).toContain('Waiting for a person (QUEUED): an approver must decide: a fact the decision relied on changed after it was made.');
    expect(text).toContain('Repair: Refund $70.00, what is left of $100.00; an approver may accept this repair, which sends $70.00 instead.');
    expect(text).toContain('Not final yet: call wait_for_decision with request_id "case-7" to wait for the outcome.');
  });

  it('a first approval of two is told as one of two approvals, never as the decision: nothing is sent until a second person approves', () => {
    const approvals = { required: 2, given: [{ by: 'Ana Lopez', at: '2026-01-05T10:00:00.000Z' }] };
    const text = describeAnswer(result({ status: 'QUEUED', why: 'approved by Ana Lopez (1 of 2); a second approver must decide', approvals }, false));
    expect(text).toContain('Approvals: 1 of 2 (Ana Lopez at 2026-01-05T10:00:00.000Z); nothing is sent until 2 different people have approved.');
    expect(text).not.toContain('Approved,');
    const sent = describeAnswer(result({ approvals: { required: 2, given: [...approvals.given, { by: 'Bea Novak', at: '2026-01-05T10:05:00.000Z' }] } }));
    expect(sent).toContain('Approved by 2 different people: Ana Lopez, Bea Novak.');
  });

  it("amounts are told in the payment's currency the answer names: a yen payment's 7000 is ¥7,000, never $70.00", () => {
    const yen = {
      currency: 'jpy',
      changes: [{ field: 'refunded_by_others', was: 0, now: 3_000 }],
      repairs: [{ code: 'refund_remaining' as const, set: { amount: 7_000 }, why: 'Refund ¥7,000, what is left of ¥10,000' }],
    };
    const text = describeAnswer(result({ status: 'REFUSED:stale_premise', why: staleOnHundred.why, ...yen }));
    expect(text).toContain('What changed: the amount already refunded was ¥0, now ¥3,000.');
    expect(text).toContain('Repair: Refund ¥7,000, what is left of ¥10,000; the repair is to ask for ¥7,000 (amount 7000) under a new request_id.');
    expect(text).not.toContain('$');
  });

  it('a sent refund names the Stripe refund and says asking again sends nothing', () => {
    expect(describeAnswer(result({ refund: 're_123' }))).toMatch(
      /^Sent \(COMMITTED\): the refund was sent to Stripe once\.\nStripe refund: re_123\.\nThis is final: asking again with request_id "case-7" answers the same and sends nothing\./,
    );
  });

  it('a wait that ends before the decision says it is still waiting and to call again with the same request_id, and when it waited less than asked', () => {
    const waiting = { ...result({ status: 'QUEUED', why: 'an approver must decide: amount at most $50.00' }, false), waitedMs: 30_400 };
    expect(describeWait(waiting, 30).split('\n')).toEqual([
      'Still waiting: QUEUED after 30 s. It is not final yet.',
      'Waiting for a person (QUEUED): an approver must decide: amount at most $50.00.',
      'Call wait_for_decision again with the same request_id "case-7" to keep waiting; one call waits at most 45 s.',
      'Request case-7, effect 3f1c2a9b0d4e; verify_receipt checks its signed receipt.',
    ]);
    expect(describeWait({ ...waiting, waitedMs: 45_000 }, 90)).toMatch(/^Still waiting: QUEUED after 45 s \(timeout_seconds 90 is more than one call waits: at most 45 s\)\. /);
    expect(describeWait({ ...result({ refund: 're_1' }), waitedMs: 12_000 }, 90)).toBe(describeAnswer(result({ refund: 're_1' })));
  });

  it('facts read as a person reads them: money in dollars, yes and no, other names as they are', () => {
    expect(describeChange({ field: 'refunded_outside', was: 0, now: 1_250 })).toBe('the amount refunded outside Interlock was $0.00, now $12.50');
    expect(describeChange({ field: 'disputed', was: false, now: true })).toBe('disputed was no, now yes');
    expect(describeChange({ field: 'status', was: 'succeeded', now: 'canceled' })).toBe('status was succeeded, now canceled');
  });

  it('errors lead with their code and say what is safe to do; never a stack', () => {
    const payload = { payment_intent: 'pi_1', amount: 1_000, flags: [] };
    const conflict = new ConflictingPayloadError({
      code: 'conflicting_payload',
      status: 409,
      message: 'request case-7 was already made with another amount; nothing was written or sent',
      body: {},
      retryAfterMs: null,
      recorded: payload,
      offered: { ...payload, amount: 1_500, reason: 'again', flags: ['vip'] },
    });
    expect(describeError(conflict).split('\n')).toEqual([
      'conflicting_payload (HTTP 409): request case-7 was already made with another amount; nothing was written or sent',
      // The payloads name no currency: their amounts are given as sent, in the payment's smallest unit.
      'Recorded: pi_1, amount 1000, no reason, no flags.',
      'Offered: pi_1, amount 1500, reason "again", flags vip.',
      'A retry must send the recorded payload; a different refund needs a new request_id.',
    ]);
    const mismatch = new InterlockError({
      code: 'currency_mismatch',
      status: 422,
      message: 'currency: the request says usd, but payment pi_1 is in jpy (amount is in its smallest unit: 2000 is ¥2,000); nothing was written or sent',
      body: {},
      retryAfterMs: null,
    });
    expect(describeError(mismatch)).toBe(
      'currency_mismatch (HTTP 422): currency: the request says usd, but payment pi_1 is in jpy (amount is in its smallest unit: 2000 is ¥2,000); nothing was written or sent. ' +
        "Work the amount out again in the payment's currency, in its smallest unit, and ask again with that currency; nothing was refunded.",
    );
    const limited = new InterlockError({ code: 'rate_limited', status: 429, message: 'busy', body: {}, retryAfterMs: 1_000 });
    expect(describeError(limited)).toBe('rate_limited (HTTP 429): busy. Nothing was written; send the same request again in 1 s.');
    const offline = new NetworkError('could not reach Interlock at http://127.0.0.1:1 (GET /v1/refunds/case-7): fetch failed', { cause: new Error('ECONNREFUSED') });
    expect(describeError(offline)).toMatch(/^network_error: could not reach Interlock .*Nothing is known about the request: sending it again with the same request_id is safe\.$/);
  });
});
