import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LedgerRow } from '../../shared/ledger.ts';
import { buildLedgerWorld, type LedgerWorld, type Login, parseCsv } from './ledger-world.ts';

// A refund sent, committed, and then reported failed by Stripe returned no money: the ledger's
// "amount Stripe refunded" leaves it out and shows it as failed at Stripe, its own figure, in the
// JSON pages and the CSV. Found by a finance review: a $15 refund settled failed kept
// amount_sent_minor 1500 beside confirmation failed, so the column summed to more than Stripe
// returned.

/** The CSV's columns before a failed refund had its own: every one stays where it was. */
const EARLIER_COLUMNS = [
  'request_id', 'agent', 'payment_intent', 'amount_asked_minor', 'amount_sent_minor', 'currency', 'status', 'decided_by_kind', 'decided_by',
  'decided_by_login', 'policy_rules', 'decided_at_ms', 'refund_id', 'confirmation', 'confirmed_via', 'effect_id', 'receipt_url', 'requested_at_ms',
  'groups', 'repair_of',
];

let lw: LedgerWorld;
let fin: Login;
const intents: Record<string, string> = {};

beforeAll(async () => {
  lw = await buildLedgerWorld({ settle: 'manual' });
  for (const [name, amount] of [['paid-20', 2_000], ['failed-15', 1_500], ['pending-5', 500]] as const) {
    intents[name] = await lw.world.payment(10_000);
    expect((await lw.ask(name, intents[name]!, amount)).status).toBe('COMMITTED');
  }
  const refundOf = (name: string) => lw.world.sandbox.refunds(intents[name]!)[0]!.id;
  lw.world.sandbox.settle(refundOf('paid-20'), 'succeeded');
  lw.world.sandbox.settle(refundOf('failed-15'), 'failed', 'expired_or_canceled_card');
  await lw.world.sandbox.webhooksIdle();
  fin = await lw.login('fin');
});
afterAll(async () => lw?.close());

const byName = (rows: readonly LedgerRow[]) => Object.fromEntries(rows.map((row) => [row.request_id, row]));

describe('a refund Stripe failed, in the ledger', () => {
  it('is not counted as refunded: amount_sent_minor is null, amount_failed_minor holds what was sent', async () => {
    const rows = byName(await lw.allPages(fin));
    const failed = rows['failed-15']!;
    expect(failed).toMatchObject({ amount_asked_minor: 1_500, amount_sent_minor: null, amount_failed_minor: 1_500, confirmation: 'failed', confirmed_via: 'webhook' });
    expect(failed.refund_id).toMatch(/^re_/);
    expect(rows['paid-20']).toMatchObject({ amount_sent_minor: 2_000, amount_failed_minor: null, confirmation: 'succeeded' });
    // Still pending at Stripe: sent, and counted as sent until Stripe says otherwise.
    expect(rows['pending-5']).toMatchObject({ amount_sent_minor: 500, amount_failed_minor: null, confirmation: 'pending' });
  });

  it("sums to what Stripe holds as refunded: every refund of the period that did not fail", async () => {
    const rows = await lw.allPages(fin);
    const sent = rows.reduce((sum, row) => sum + (row.amount_sent_minor ?? 0), 0);
    const atStripe = lw.world.sandbox.refunds().filter((refund) => refund.status !== 'failed');
    expect(sent).toBe(atStripe.reduce((sum, refund) => sum + refund.amount, 0));
    expect(sent).toBe(2_500);
    expect(rows.reduce((sum, row) => sum + (row.amount_failed_minor ?? 0), 0)).toBe(1_500);
  });

  it('the CSV says the same, the new column after every earlier one', async () => {
    const [header, ...records] = parseCsv(await (await lw.get(fin, '/api/ledger.csv')).text());
    expect(header?.slice(0, EARLIER_COLUMNS.length + 1)).toEqual([...EARLIER_COLUMNS, 'amount_failed_minor']);
    const cell = (record: string[], column: string) => record[header!.indexOf(column)];
    const failed = records.find((record) => record[0] === 'failed-15')!;
    expect([cell(failed, 'amount_sent_minor'), cell(failed, 'confirmation'), cell(failed, 'amount_failed_minor')]).toEqual(['', 'failed', '1500']);
    // Its outcome, and its amounts as decimals for a spreadsheet, come after every earlier column.
    expect([cell(failed, 'outcome'), cell(failed, 'amount_sent'), cell(failed, 'amount_failed')]).toEqual(['failed_at_stripe', '', '15.00']);
    const paid = records.find((record) => record[0] === 'paid-20')!;
    expect([cell(paid, 'amount_sent_minor'), cell(paid, 'amount_failed_minor')]).toEqual(['2000', '']);
  });
});
