import { describe, expect, it } from 'vitest';
import type { Entry } from '../../shared/entries.ts';
import { LEDGER_CSV_COLUMNS, LEDGER_OUTCOMES, type LedgerOutcome, type LedgerRow } from '../../shared/ledger.ts';
import { decimalOf } from '../../shared/money.ts';
import { currentStatus } from '../../server/refunds/answers.ts';
import { ledgerCsvHeader, ledgerCsvRecord } from '../../server/ledger/csv.ts';
import { chainOutcome, type OutcomeFacts, outcomeOf } from '../../server/ledger/outcome.ts';
import { LedgerProjection } from '../../server/ledger/projection.ts';
import { readFixture } from '../fixtures/journals/replay.ts';
import { parseCsv } from './ledger-world.ts';

// How a request ended, for finance: one closed list of outcomes folded from the journal alone,
// beside the status the agent is told (CLOSED there is a rejection, a repair or a closed ambiguity
// alike). The fixture journals hold every kind of chain the inbox writes: policy, approved,
// rejected (with and without a reason), repaired, stale, ambiguous and closed, waiting its turn,
// and refused for good because Stripe knows no such payment.

const INBOX = 'inbox';
const displayName = (login: string) => login;

function ledgerOf(fixture: string): { rows: LedgerRow[]; chains: Map<string, Entry[]> } {
  const entries = readFixture(new URL(`../fixtures/journals/${fixture}.jsonl`, import.meta.url).pathname);
  const projection = new LedgerProjection(INBOX);
  const chains = new Map<string, Entry[]>();
  for (const [i, entry] of entries.entries()) {
    projection.note(entry, i + 1);
    chains.set(entry.effect_id, [...(chains.get(entry.effect_id) ?? []), entry]);
  }
  return { rows: projection.page({}, { limit: 10_000 }, displayName).rows, chains };
}

const FIXTURES = { 'day-1': ledgerOf('day-1'), 'day-2': ledgerOf('day-2'), 'day-3': ledgerOf('day-3') };

describe('a ledger row says how its request ended', () => {
  it.each([
    ['day-1', 'routine-1', 'COMMITTED', 'refunded', null],
    ['day-1', 'approved-1', 'COMMITTED', 'refunded', null],
    ['day-1', 'rejected-1', 'CLOSED', 'rejected', null],
    ['day-1', 'repaired-1', 'CLOSED', 'repaired', null],
    ['day-1', 'repaired-1:repair:4d655cc7', 'COMMITTED', 'refunded', null],
    ['day-1', 'stale-1', 'QUEUED', 'open', null],
    ['day-1', 'breach-2', 'QUEUED', 'open', null],
    ['day-1', 'amb-1', 'AMBIGUOUS', 'closed', null],
    ['day-2', 'krw-1', 'CLOSED', 'rejected', 'We do not refund in won by hand'],
    ['day-2', 'jpy-2', 'QUEUED', 'open', null],
    ['day-3', 'turn-missing', 'REFUSED:payment_missing', 'refused', null],
    ['day-3', 'turn-person', 'QUEUED', 'open', null],
  ] as const)('%s %s: the agent is told %s, finance reads %s, and why a person rejected it (%j)', (fixture, requestId, status, outcome, reason) => {
    const row = FIXTURES[fixture].rows.find((r) => r.request_id === requestId);
    expect([row?.status, row?.outcome, row?.reject_reason]).toEqual([status, outcome, reason]);
  });

  it('keeps the status every agent is told (currentStatus of the whole chain) in every fixture journal, a refusal for good included', () => {
    let checked = 0;
    for (const { rows, chains } of Object.values(FIXTURES)) {
      for (const row of rows) {
        expect([row.request_id, row.status]).toEqual([row.request_id, currentStatus(chains.get(row.effect_id)!)]);
        checked += 1;
      }
    }
    expect(checked).toBe(23);
  });

  it('is the same whether folded entry by entry (the ledger, the lists) or read from the whole chain (the item page)', () => {
    for (const { rows, chains } of Object.values(FIXTURES)) {
      for (const row of rows) expect([row.request_id, chainOutcome(chains.get(row.effect_id)!)]).toEqual([row.request_id, row.outcome]);
    }
  });

  const none: OutcomeFacts = { sending: false, committed: false, failedAtStripe: false, ambiguous: false, closing: null, refusedForGood: false };
  it.each([
    ['nothing yet', {}, 'open'],
    ['approved, its send under way', { sending: true, closing: 'approve' }, 'open'],
    ['sent', { committed: true }, 'refunded'],
    ['sent, Stripe reported it failed', { committed: true, failedAtStripe: true }, 'failed_at_stripe'],
    ['sent on a later escalation after an ambiguity', { committed: true, ambiguous: true }, 'refunded'],
    ['a person rejected it', { closing: 'reject' }, 'rejected'],
    ['a person accepted a repair', { closing: 'repair' }, 'repaired'],
    ['ambiguous, waiting for a person', { ambiguous: true }, 'ambiguous'],
    ['ambiguous, a person closed it', { ambiguous: true, closing: 'reject' }, 'closed'],
    ['Stripe knows no such payment', { refusedForGood: true }, 'refused'],
    ['approved, not sent yet', { closing: 'approve' }, 'open'],
  ] as const)('outcomeOf: %s is %s', (_case, facts, outcome) => {
    expect(outcomeOf({ ...none, ...facts })).toBe(outcome satisfies LedgerOutcome);
  });
});

describe("a row's currency", () => {
  it('is read from the facts at its turn for a request that waited for Stripe and then went to a person', () => {
    const row = FIXTURES['day-3'].rows.find((r) => r.request_id === 'turn-person');
    expect([row?.currency, row?.amount_asked_minor]).toEqual(['usd', 8_000]);
    // Stripe knows no such payment: no facts were ever read, and no currency is guessed.
    expect(FIXTURES['day-3'].rows.find((r) => r.request_id === 'turn-missing')?.currency).toBeNull();
  });
});

describe('totals per currency over a filter', () => {
  it('add asked, sent and failed per currency, each outcome apart, never across currencies', () => {
    const projection = new LedgerProjection(INBOX);
    const entries = readFixture(new URL('../fixtures/journals/day-2.jsonl', import.meta.url).pathname);
    for (const [i, entry] of entries.entries()) projection.note(entry, i + 1);
    const totals = projection.totals({}, displayName);
    expect(totals.count).toBe(7);
    expect(Object.keys(totals.currencies)).toEqual(['eur', 'jpy', 'krw', 'kwd', 'usd']);
    expect(totals.currencies.jpy).toMatchObject({ count: 2, asked_minor: 13_000, sent_minor: 5_000, failed_minor: 0 });
    expect(totals.currencies.jpy?.by_outcome.refunded).toEqual({ count: 1, asked_minor: 5_000 });
    expect(totals.currencies.jpy?.by_outcome.open).toEqual({ count: 1, asked_minor: 8_000 });
    expect(totals.currencies.krw?.by_outcome.rejected).toEqual({ count: 1, asked_minor: 5_000 });
    expect(Object.keys(totals.currencies.usd!.by_outcome)).toEqual([...LEDGER_OUTCOMES]);
    // The filter is the ledger's: only rejected rows, only the won.
    const rejected = projection.totals({ outcome: 'rejected' }, displayName);
    expect([rejected.count, Object.keys(rejected.currencies)]).toEqual([1, ['krw']]);
    expect(projection.totals({ currency: 'usd', outcome: 'open' }, displayName).currencies.usd).toMatchObject({ count: 1, asked_minor: 2_000, sent_minor: 0 });
  });
});

describe('the CSV for a spreadsheet', () => {
  it.each([
    [2_000, 'usd', '20.00'],
    [5, 'usd', '0.05'],
    [3_000, 'jpy', '3000'],
    [5_000, 'krw', '5000'],
    [1_500, 'kwd', '1.500'],
    [4, 'KWD', '0.004'],
    [123_456_789, 'eur', '1234567.89'],
  ])('%i minor units of %s is %s', (minor, currency, decimal) => {
    expect(decimalOf(minor, currency)).toBe(decimal);
  });

  it('adds ISO-8601 times and decimal amounts after every earlier column, the rejection and its reason before them', () => {
    const rows = FIXTURES['day-2'].rows;
    const [header, ...records] = parseCsv(ledgerCsvHeader() + rows.map(ledgerCsvRecord).join(''));
    expect(header).toEqual([...LEDGER_CSV_COLUMNS]);
    expect(header?.slice(-9)).toEqual(['outcome', 'reject_reason', 'requested_at', 'decided_at', 'amount_asked', 'amount_sent', 'amount_failed', 'approved_by_logins', 'beneficiary']);
    const cells = (requestId: string) => {
      const record = records.find((r) => r[0] === requestId)!;
      const row = rows.find((r) => r.request_id === requestId)!;
      return { record: Object.fromEntries(header!.map((column, i) => [column, record[i]])), row };
    };
    const krw = cells('krw-1');
    expect(krw.record).toMatchObject({ outcome: 'rejected', reject_reason: 'We do not refund in won by hand', amount_asked: '5000', amount_sent: '', amount_failed: '' });
    expect(krw.record.requested_at).toBe(new Date(krw.row.requested_at_ms!).toISOString());
    expect(krw.record.decided_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(Date.parse(krw.record.decided_at!)).toBe(krw.row.decided_at_ms);
    expect(cells('kwd-1').record).toMatchObject({ outcome: 'open', amount_asked: '4.000', decided_at: '' });
    expect(cells('jpy-1').record).toMatchObject({ outcome: 'refunded', amount_asked: '5000', amount_sent: '5000' });
    expect(cells('usd-vip-1').record).toMatchObject({ outcome: 'refunded', amount_asked: '80.00', amount_sent: '80.00' });
  });
});
