import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { JsonObject } from '../../shared/json.ts';
import { receiptSubject } from '../../shared/receipts/subject.ts';
import { buildChain, committedSteps, EFFECT_ID, REFUND_ID } from '../support/entries.ts';

// What a receipt is about (the request, the payment, the amount and its currency), read from its
// entries so the Verify page can say what a valid receipt proves, for every receipt version.

const v1Receipt: JsonObject = JSON.parse(readFileSync(join(import.meta.dirname, '..', 'fixtures', 'receipts', 'v1-committed.json'), 'utf8'));

describe('receipt subject', () => {
  it('receipt subject: a v1 receipt names its request, agent, payment, amount, currency and refund', () => {
    expect(receiptSubject(v1Receipt.entries as JsonObject[])).toEqual({
      request_id: 'routine-1',
      agent: 'support-bot',
      payment_intent: 'pi_OTdy9vK7Foh4Zoj0cr4MlZ32',
      amount_minor: 2000,
      currency: 'usd',
      sent_amount_minor: 2000,
      refund: 're_4aiuRhkoI6uiUQ3l0dv5K5q1',
    });
  });

  it('receipt subject: a committed chain names the refund the commit recorded', () => {
    const subject = receiptSubject(buildChain(EFFECT_ID, committedSteps()) as unknown as JsonObject[]);
    expect(subject.refund).toBe(REFUND_ID);
    expect(subject.sent_amount_minor).not.toBeNull();
  });

  it('receipt subject: a chain with nothing sent has no sent amount and no refund', () => {
    const proposed = (v1Receipt.entries as JsonObject[]).slice(0, 1);
    expect(receiptSubject(proposed)).toMatchObject({ request_id: 'routine-1', amount_minor: 2000, sent_amount_minor: null, refund: null });
  });

  it('receipt subject: entries that record none of it give nulls, never a guess', () => {
    expect(receiptSubject([{ kind: 'PROPOSED' }])).toEqual({
      request_id: null,
      agent: null,
      payment_intent: null,
      amount_minor: null,
      currency: null,
      sent_amount_minor: null,
      refund: null,
    });
  });
});
